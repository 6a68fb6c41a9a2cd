"""
Process-level attacks on the supervisor: a compile worker killed in the
middle of a job, workers that send garbage instead of frames, forged compile
RESULTs (a non-ELF "CUBIN", none at all), workers that stop answering, and
the supervisor itself killed with SIGKILL while jobs are in flight. Each case
asserts the exact recovery and then (unless the worker is broken for good)
that a normal submission is served normally.
"""
import json
import os
import shutil
import signal
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

import frames
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
    frames.install(fake)  # fake_worker.py's frame encoding
    (fake / "mode").write_text(mode)
    (fake / "real").write_text(str(LIBEXEC / "kevald-compile"))
    s = make_server("--libexec", str(fake), ready=False)
    z = s.wait_ready(timeout=60)
    # The forged worker of `result_without_job` sends a valid HELLO first, so /readyz can say
    # ready before its RESULT is read: wait for the kill and for the replacement's HELLO.
    deadline = time.monotonic() + 60
    while True:
        log = s.log_text()
        spawns = int((fake / "spawns").read_text())
        if f"killing compile worker 0" in log and spawns >= 2:
            z = s.readyz().json()
            if z["compile_workers"]["restarts"] >= 1 and z["compile_workers"]["ready"] == 1:
                break
        assert time.monotonic() < deadline, (spawns, z, log[-3000:])
        time.sleep(0.05)
    assert reason in log, log[-3000:]
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


# ---- forged and silent compile workers (fake_worker.py) ------------------------

def fake_libexec(tmp_path, mode, persist=False):
    fake = tmp_path / "libexec"
    fake.mkdir()
    shutil.copy(HERE / "fake_worker.py", fake / "kevald-compile")
    os.chmod(fake / "kevald-compile", 0o755)
    frames.install(fake)  # fake_worker.py's frame encoding
    (fake / "mode").write_text(mode)
    (fake / "real").write_text(str(LIBEXEC / "kevald-compile"))
    if persist:
        (fake / "persist").write_text("")
    return fake


def fake_jobs(fake):
    """PIDs of the fake workers that received a JOB, one per JOB."""
    try:
        return [int(x) for x in (fake / "jobs").read_text().split()]
    except FileNotFoundError:
        return []


def fake_job_sources(fake):
    """How many sources each JOB the fake workers received carried (a group JOB: more than 1)."""
    try:
        return [int(x) for x in (fake / "job_sources").read_text().split()]
    except FileNotFoundError:
        return []


def test_forged_compile_result_is_neither_believed_nor_cached(make_server, tmp_path):
    """ok: true with fields of the wrong types and a 16-byte "CUBIN" that is no ELF: the worker is
    killed, the compile goes to a real worker, and the cache serves the real CUBIN's kernels."""
    fake = fake_libexec(tmp_path, "forged_cubin")
    s = make_server("--libexec", str(fake), ready=False)
    s.wait_ready(timeout=60)
    src = unique_good_source()
    with s.client() as c:
        d = submit(c, compile_body(src))
        assert d["verdict"] == "compiled", json.dumps(d)[:2000]
        comp = d["result"]["compile"]
        assert [k["name"] for k in comp["kernels"]] == ["k"] and comp["cache_hit"] is False, comp
        assert len(fake_jobs(fake)) == 1, "the forger got the job once"
        log = s.log_text()
        assert "sent an invalid compile RESULT" in log and "/log is not a string" in log, log[-3000:]
        again = submit(c, compile_body(src))
        comp = again["result"]["compile"]
        assert again["verdict"] == "compiled" and comp["cache_hit"] is True, json.dumps(again)[:2000]
        assert [k["name"] for k in comp["kernels"]] == ["k"], comp
        assert [p["size"] for p in comp["kernels"][0]["params"]] == [8, 4], comp
        assert_serves_normally(s, c)


def test_forged_compile_cache_entry_is_a_miss(make_server):
    """A cache entry that fails the checks a fresh RESULT gets (as one an unchecked forger could
    have left in an existing store) is not served: the source is compiled again and the entry
    replaced."""
    s = make_server()
    src = unique_good_source()
    with s.client() as c:
        assert submit(c, compile_body(src))["verdict"] == "compiled"
        con = sqlite3.connect(s.db, timeout=10)
        n = con.execute("UPDATE compile_cache SET compile = ?, cubin = ?",
                        (json.dumps({"ok": True, "kernels": [{"name": "evil", "params": []}]}),
                         b"NOT-AN-ELF-CUBIN")).rowcount
        con.commit()
        con.close()
        assert n >= 1
        again = submit(c, compile_body(src))
        comp = again["result"]["compile"]
        assert again["verdict"] == "compiled" and comp["cache_hit"] is False, json.dumps(again)[:2000]
        assert [k["name"] for k in comp["kernels"]] == ["k"], comp
        assert "ignoring a compile cache entry that fails its checks" in s.log_text()
        third = submit(c, compile_body(src))["result"]["compile"]
        assert third["cache_hit"] is True and [k["name"] for k in third["kernels"]] == ["k"], third


def test_compile_result_without_cubin_counts_as_an_attempt(make_server, tmp_path):
    """A worker broken for good that answers ok: true without a CUBIN gets the job max_attempts (3)
    times, then the job ends as internal_error (an infrastructure fault), not handed on forever."""
    fake = fake_libexec(tmp_path, "no_cubin", persist=True)
    s = make_server("--libexec", str(fake), ready=False)
    s.wait_ready(timeout=60)
    with s.client() as c:
        d = submit(c, compile_body(unique_good_source()), wait=30)
        assert d.get("state") == "done", f"never ended: {json.dumps(d)[:1000]}; jobs sent {len(fake_jobs(fake))}"
        assert d["verdict"] == "internal_error", json.dumps(d)[:2000]
        assert "not the source's" in d["result"]["error"]["message"], d["result"]["error"]
        assert "without a CUBIN" in d["result"]["error"]["message"], d["result"]["error"]
    jobs = fake_jobs(fake)
    assert len(jobs) == 3 and len(set(jobs)) == 3, jobs   # three attempts, each on a fresh worker


def test_compile_worker_that_stops_answering_is_retried_on_a_fresh_one(make_server, tmp_path):
    """A worker that never answers is killed by the watchdog (compile limit + 5 s): its source is
    compiled again by a fresh worker instead of being given compile_error."""
    fake = fake_libexec(tmp_path, "hang")
    s = make_server("--libexec", str(fake), "--compile-timeout-ms", "3000", ready=False)
    s.wait_ready(timeout=60)
    with s.client() as c:
        d = submit(c, compile_body(unique_good_source()), wait=40)
        assert d["verdict"] == "compiled", json.dumps(d)[:2000]
        assert len(fake_jobs(fake)) == 1
        assert "stopped answering" in s.log_text() and "fresh worker" in s.log_text()
        assert_serves_normally(s, c)


def test_compile_workers_that_all_hang_blame_no_source(make_server, tmp_path):
    """When every worker stops answering, no innocent source gets compile_error (a reward of 0 for
    the environment's fault): each job is tried alone on two workers, then ends as internal_error.
    Two compile-only jobs queued for fewer idle workers may first go as one group JOB; a group whose
    worker stops answering charges no attempt (each is tried alone next)."""
    fake = fake_libexec(tmp_path, "hang", persist=True)
    s = make_server("--libexec", str(fake), "--compile-timeout-ms", "3000", "--compile-workers", "2", ready=False)
    s.wait_ready(timeout=60)
    with s.client() as c:
        ids = [c.post("/v1/submissions", json=compile_body(unique_good_source())).json()["id"] for _ in range(2)]
        for sid in ids:
            d = wait_done(c, sid, wait=60)
            assert d["verdict"] == "internal_error", json.dumps(d)[:2000]
            assert "infrastructure fault" in d["result"]["error"]["message"], d["result"]["error"]
    sizes = fake_job_sources(fake)
    assert sizes.count(1) == 4 and all(n == 2 for n in sizes if n != 1) and len(sizes) <= 5, sizes


def test_source_that_hangs_two_workers_while_others_compile_is_blamed(make_server, tmp_path):
    """A source on which two workers in turn stop answering, while the workers compile other
    sources meanwhile, is the source's fault: compile_error, and the message says why."""
    fake = fake_libexec(tmp_path, "proxy_hang_marked", persist=True)
    s = make_server("--libexec", str(fake), "--compile-timeout-ms", "3000", "--compile-workers", "2", ready=False)
    s.wait_ready(timeout=60)
    with s.client() as c:
        bad = c.post("/v1/submissions", json=compile_body(unique_good_source() + "// HANG_ME\n")).json()["id"]
        deadline = time.monotonic() + 30 * SLOW
        while "stopped answering" not in s.log_text():   # the first worker's hang (limit + 5 s)
            assert time.monotonic() < deadline, s.log_text()[-3000:]
            time.sleep(0.1)
        # other sources compile on the workers meanwhile
        for _ in range(2):
            assert submit(c, compile_body(unique_good_source()))["verdict"] == "compiled"
        d = wait_done(c, bad, wait=40)
        assert d["verdict"] == "compile_error", json.dumps(d)[:2000]
        msg = d["result"]["error"]["message"]
        assert "time limit" in msg and "twice, on two workers" in msg and "while other compiles completed" in msg, msg
    hung = (fake / "hung").read_text().split()
    assert len(hung) == 2 and len(set(hung)) == 2, hung   # two different worker processes
