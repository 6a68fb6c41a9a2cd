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
import os
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
SOURCE_ROOT = Path(os.environ.get("KEVALD_SOURCE_ROOT", HERE.parent.parent))
BUILD_ROOT = Path(os.environ.get("KEVALD_BUILD_ROOT", SOURCE_ROOT / "build"))
KEVALD = BUILD_ROOT / "server" / "kevald"
LIBEXEC = BUILD_ROOT / "worker"
SANITIZED = bool(os.environ.get("ASAN_OPTIONS") or os.environ.get("UBSAN_OPTIONS"))
SLOW = 4.0 if SANITIZED else 1.0

SECRET_ENV = ("KEVALD_HOSTILE_SECRET", "s3cr3t-" + uuid.uuid4().hex)
# Text that would show that /etc/passwd leaked (its first line on every Linux).
PASSWD_MARK = "root:x:0:0"

GOOD_SOURCE = 'extern "C" __global__ void k(float *x, int n) {\n' \
              '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }\n'


def tasks_dir():
    lib = SOURCE_ROOT / "tests" / "fixtures" / "tasks"
    return lib if lib.is_dir() else SOURCE_ROOT / "tasks"


class Server:
    def __init__(self, workdir, args=(), db=None):
        self.dir = Path(workdir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db = Path(db) if db else self.dir / "k.db"
        self.args = list(args)
        self.proc = None
        self.port = None
        self.log_path = self.dir / "server.log"

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout=30.0):
        if not KEVALD.exists():
            pytest.fail(f"no kevald binary at {KEVALD} (build first)")
        port_file = self.dir / "port"
        if port_file.exists():
            port_file.unlink()
        argv = [str(KEVALD), "serve", "--listen", "127.0.0.1:0", "--db", str(self.db),
                "--port-file", str(port_file), "--gpus", "none", "--tasks", str(tasks_dir())]
        if not any(a.startswith("--libexec") for a in self.args):
            argv += ["--libexec", str(LIBEXEC)]
        if not any(a.startswith("--compile-workers") for a in self.args):
            argv += ["--compile-workers", "1"]
        argv += self.args
        env = dict(os.environ)
        env[SECRET_ENV[0]] = SECRET_ENV[1]
        log = open(self.log_path, "ab")
        log.write(f"==== start: {' '.join(argv)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env, cwd=self.dir)
        log.close()
        deadline = time.monotonic() + timeout * SLOW
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"kevald exited {self.proc.returncode} at start:\n{self.log_tail()}")
            try:
                text = port_file.read_text().strip()
                if text:
                    self.port = int(text)
                    return self
            except (FileNotFoundError, ValueError):
                pass
            time.sleep(0.02)
        self.proc.kill()
        pytest.fail(f"kevald wrote no port file within {timeout}s:\n{self.log_tail()}")

    def readyz(self):
        return httpx.get(self.url + "/readyz", timeout=5)

    def wait_ready(self, timeout=30.0):
        deadline = time.monotonic() + timeout * SLOW
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.readyz()
                if last.status_code == 200:
                    return last.json()
            except httpx.HTTPError as e:
                last = e
            time.sleep(0.05)
        pytest.fail(f"not ready within {timeout}s: {last!r}\n{self.log_tail()}")

    def stop(self, sig=signal.SIGTERM, timeout=60.0):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout * SLOW)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.proc = None
                return "timeout"
        rc = self.proc.returncode
        self.proc = None
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def client(self):
        return httpx.Client(base_url=self.url, timeout=60.0 * SLOW)

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n=60):
        return "\n".join(self.log_text().splitlines()[-n:])

    def worker_pids(self, name="kevald-compile"):
        """PIDs of this server's live child processes named @name."""
        pids = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            if comm == name[:15] and fields[0] != "Z" and int(fields[1]) == self.proc.pid:
                pids.append(int(p.name))
        return pids


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
def tmp_module():
    with tempfile.TemporaryDirectory(prefix="kevald-hostile-") as d:
        yield Path(d)


@pytest.fixture
def make_server(tmp_path):
    started = []

    def make(*args, db=None, ready=True, name=None):
        s = Server(tmp_path / (name or f"s{len(started)}"), args, db=db).start()
        started.append(s)
        if ready:
            s.wait_ready()
        return s

    yield make
    for s in started:
        rc = s.stop()
        assert rc in (0, None), f"kevald exited {rc} on SIGTERM:\n{s.log_tail()}"


@pytest.fixture(scope="module")
def server(tmp_module):
    """One server for the compile-time attacks, with a short compile limit."""
    s = Server(tmp_module / "shared", ["--compile-timeout-ms", "3000"]).start()
    s.wait_ready()
    yield s
    rc = s.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{s.log_tail()}"


@pytest.fixture(scope="module")
def client(server):
    with server.client() as c:
        yield c


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        for name in ("server",):
            s = item.funcargs.get(name)
            if isinstance(s, Server):
                rep.sections.append(("kevald log", s.log_tail(80)))
