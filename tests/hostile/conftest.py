"""
Hostile-suite harness: the real `kevald serve` (compile-only: --gpus none) on
port 0 with a real SQLite file in a temporary folder and the real compile
workers from the build tree (KEVALD_BUILD_ROOT), sandboxed as in production.

Every test attacks the service and then checks two things: the exact outcome
of the attack, and that the same server still serves a normal submission
normally (`assert_serves_normally`). The server is started with a secret in
its environment (SECRET_ENV) so tests can check that no result ever echoes
the supervisor's environment, and its log is searched for leaked file text.
"""
import json
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "pylib"))
from kevaldserver import (BUILD_ROOT, FIXTURE_TASKS, KEVALD, LIBEXEC, PROJECT_TASKS, SANITIZED, SLOW,  # noqa: E402,F401
                          SOURCE_ROOT, Server, assert_stopped_cleanly, client, make_server,
                          pytest_runtest_makereport, tmp_module)

HERE = Path(__file__).resolve().parent
SECRET_ENV = ("KEVALD_HOSTILE_SECRET", "s3cr3t-" + uuid.uuid4().hex)
# Text that would show that /etc/passwd leaked (its first line on every Linux).
PASSWD_MARK = "root:x:0:0"

GOOD_SOURCE = 'extern "C" __global__ void k(float *x, int n) {\n' \
              '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }\n'

# The small fixture library is enough here (and starts faster); every server
# carries the secret in its environment; attacks may take a while to answer.
Server.tasks = FIXTURE_TASKS if FIXTURE_TASKS.is_dir() else PROJECT_TASKS
Server.env_extra = {SECRET_ENV[0]: SECRET_ENV[1]}
Server.client_timeout = 60.0
Server.tmp_prefix = "kevald-hostile-"


def submit(c, body, wait=60):
    """POST one submission and wait for its result; the response JSON."""
    r = c.post(f"/v1/submissions?wait={int(wait * SLOW)}", json=body)
    assert r.status_code in (200, 201, 202), r.text
    d = r.json()
    if d.get("state") != "done":
        d = wait_done(c, d["id"], wait)
    return d


def wait_done(c, sid, wait=60):
    deadline = time.monotonic() + wait * SLOW
    while True:
        r = c.get(f"/v1/submissions/{sid}?wait=5")
        assert r.status_code == 200, r.text
        d = r.json()
        if d.get("state") == "done" or time.monotonic() > deadline:
            return d
        time.sleep(0.05)


def compile_body(source, **kw):
    b = {"mode": "compile", "source": source}
    b.update(kw)
    return b


def unique_good_source():
    """A valid kernel, unique so that the compile cache cannot answer for it."""
    return GOOD_SOURCE + f"// {uuid.uuid4().hex}\n"


def assert_serves_normally(server, c=None):
    """The service still compiles a normal submission, and says it is ready."""
    own = c is None
    if own:
        c = server.client()
    try:
        d = submit(c, compile_body(unique_good_source()))
        assert d["verdict"] == "compiled", json.dumps(d)[:2000]
        assert d["result"]["compile"]["ok"] is True
        assert [k["name"] for k in d["result"]["compile"]["kernels"]] == ["k"]
        assert server.readyz().status_code == 200
    finally:
        if own:
            c.close()


def assert_nothing_leaked(text, server=None):
    """No host file content nor the supervisor's environment in @text (and the log)."""
    for hay in [text] + ([server.log_text()] if server else []):
        assert PASSWD_MARK not in hay
        assert SECRET_ENV[1] not in hay


@pytest.fixture(scope="module")
def server(tmp_module):
    """One server for the compile-time attacks, with a short compile limit."""
    s = Server(tmp_module / "shared", ["--compile-timeout-ms", "3000"]).start()
    s.wait_ready()
    yield s
    assert_stopped_cleanly(s)
