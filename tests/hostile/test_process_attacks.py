"""
Process-level attacks on the supervisor: a compile worker killed in the
middle of a job, workers that send garbage instead of frames, and the
supervisor itself killed with SIGKILL while jobs are in flight. Each case
asserts the exact recovery and then that a normal submission is served
normally.
"""
import json
import os
import shutil
import signal
import time
import uuid
from pathlib import Path

import pytest

from conftest import (HERE, LIBEXEC, SANITIZED, SLOW, assert_serves_normally, compile_body,
                      submit, unique_good_source, wait_done)

# NVRTC allocates heavily: under AddressSanitizer's allocator it is ~10x slower.
SLOW_DEPTH = 10 if SANITIZED else 13


def slow_source(depth=SLOW_DEPTH):
    """A finite compile that takes seconds (2^depth distinct instantiations);
    unique, so no cache answers for it."""
    return ("template<class T> struct L {};\n"
            "template<class T> struct R {};\n"
            "template<int D, class T> struct E { static const int v = E<D-1, L<T> >::v + E<D-1, R<T> >::v; };\n"
            "template<class T> struct E<0, T> { static const int v = 1; };\n"
            f'extern "C" __global__ void k(int *x) {{ x[0] = E<{depth}, int>::v; }}\n'
            f"// {uuid.uuid4().hex}\n")


def wait_state(c, sid, state, timeout=30):
    deadline = time.monotonic() + timeout * SLOW
    while time.monotonic() < deadline:
        d = c.get(f"/v1/submissions/{sid}").json()
        if d["state"] == state:
            return d
        time.sleep(0.02)
    pytest.fail(f"submission {sid} never reached {state}: {d}")


def pid_alive(pid):
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st[st.rindex(")") + 2] != "Z"


def wait_gone(pids, timeout=5):
    deadline = time.monotonic() + timeout * SLOW
    while time.monotonic() < deadline:
        if not any(pid_alive(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


def test_compile_worker_sigkilled_mid_job_is_retried(make_server):
    s = make_server()
    with s.client() as c:
        r = c.post("/v1/submissions", json=compile_body(slow_source()))
        assert r.status_code == 202, r.text
        sid = r.json()["id"]
        wait_state(c, sid, "compiling")
        pids = s.worker_pids()
        assert len(pids) == 1, pids
        time.sleep(0.3)   # well inside NVRTC
        os.kill(pids[0], signal.SIGKILL)
        assert wait_gone(pids)
        d = wait_done(c, sid, wait=120)
        assert d["verdict"] == "compiled", json.dumps(d)[:2000]
        # The only worker died mid-compile, so the compile was sent again to
        # its replacement (the dispatcher may count that as a new attempt or not).
        assert d["attempts"] in (1, 2), d["attempts"]
        z = s.readyz().json()
        assert z["compile_workers"]["restarts"] >= 1, z
        assert "compile worker 0" in s.log_text() and "signal 9" in s.log_text()
        assert_serves_normally(s, c)


@pytest.mark.parametrize("mode,reason", [
    ("garbage", "malformed frame"),
    ("bad_magic", "malformed frame"),
    ("huge_length", "oversized frame"),
    ("bad_type", "malformed frame"),
    ("not_object", "not a JSON object"),
    ("result_without_job", "RESULT without a job"),
    ("hello_twice", "HELLO twice"),
])
def test_worker_sending_garbage_is_killed_and_replaced(make_server, tmp_path, mode, reason):
    fake = tmp_path / "libexec"
    fake.mkdir()
    shutil.copy(HERE / "fake_worker.py", fake / "kevald-compile")
    os.chmod(fake / "kevald-compile", 0o755)
    (fake / "mode").write_text(mode)
    (fake / "real").write_text(str(LIBEXEC / "kevald-compile"))
    s = make_server("--libexec", str(fake), ready=False)
    z = s.wait_ready(timeout=60)
    log = s.log_text()
    assert f"killing compile worker 0" in log and reason in log, log[-3000:]
    assert int((fake / "spawns").read_text()) >= 2   # the bad one, then a real one
    assert z["compile_workers"]["restarts"] >= 1, z
    assert z["compile_workers"]["ready"] == 1
    assert s.proc.poll() is None   # the supervisor is still up
    assert_serves_normally(s)


def test_supervisor_sigkilled_with_jobs_in_flight(make_server, tmp_path):
    db = tmp_path / "shared.db"
    s1 = make_server("--lease-s", "2", "--compile-workers", "2", db=db, name="first")
    with s1.client() as c:
        ids = []
        for i in range(3):
            r = c.post("/v1/submissions", json=compile_body(slow_source(SLOW_DEPTH - 1)))
            assert r.status_code == 202, r.text
            ids.append(r.json()["id"])
        for i in range(5):
            r = c.post("/v1/submissions", json=compile_body(unique_good_source()))
            assert r.status_code == 202, r.text
            ids.append(r.json()["id"])
        wait_state(c, ids[0], "compiling")
        workers = s1.worker_pids()
        assert len(workers) == 2, workers
    assert s1.kill9() == -signal.SIGKILL
    # The workers die with their supervisor (PR_SET_PDEATHSIG).
    assert wait_gone(workers, timeout=5), [p for p in workers if pid_alive(p)]
    s2 = make_server("--lease-s", "2", "--compile-workers", "2", db=db, name="second")
    with s2.client() as c:
        for sid in ids:
            d = wait_done(c, sid, wait=120)
            assert d["state"] == "done" and d["verdict"] == "compiled", json.dumps(d)[:2000]
        assert_serves_normally(s2, c)
