"""
Durability and shutdown: an acknowledged submission survives kill -9; SIGTERM
with jobs in flight exits 0 and the jobs complete after a restart; a long-poll
waiter is answered, not reset, when the server shuts down; a full disk
(enospc_preload.c, LD_PRELOAD'd) strands no acknowledged job, answers writes
with 503 and Retry-After and shows in /readyz; `kevald store copy` from a
missing or foreign file refuses and leaves the target as it was.
"""
import os
import signal
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from conftest import (KEVALD, PG_STORE, SANITIZED, SLOW, Server, accepted, compile_sub, full_sub, unique,
                      GOOD_KERNEL)

SOURCES = [f"// variant {i}\n{GOOD_KERNEL}" for i in range(5)]


def wait_all_done(client, ids, timeout):
    deadline = time.monotonic() + timeout * SLOW
    pending = set(ids)
    verdicts = {}
    while pending and time.monotonic() < deadline:
        for sid in list(pending):
            r = client.get(f"/v1/submissions/{sid}")
            assert r.status_code == 200, f"acknowledged {sid} lost: {r.status_code} {r.text[:200]}"
            b = r.json()
            if b["state"] == "done":
                verdicts[sid] = b["verdict"]
                pending.discard(sid)
        if pending:
            time.sleep(0.2)
    assert not pending, f"{len(pending)} acknowledged submissions never finished, e.g. {sorted(pending)[:5]}"
    return verdicts


def test_kill9_loses_nothing_acknowledged(tmp_path):
    s = Server(tmp_path / "crash").start()
    s.wait_ready()
    total, kill_at = 1000, 500
    acked = []
    lock = threading.Lock()
    killed = threading.Event()
    local = threading.local()
    clients = []

    def submit(i):
        if killed.is_set():
            return
        if not hasattr(local, "c"):
            local.c = httpx.Client(base_url=s.url, timeout=60)     # keep-alive per thread
            with lock:
                clients.append(local.c)
        try:
            r = local.c.post("/v1/submissions", json=compile_sub(SOURCES[i % len(SOURCES)], tags={"sample": i}))
        except httpx.HTTPError:
            return              # in flight at the kill: not acknowledged, may or may not exist
        if r.status_code == 202:
            with lock:
                acked.append((r.json()["id"], i))
                n = len(acked)
            if n == kill_at:
                killed.set()
                s.kill9()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(submit, range(total)))
    for c in clients:
        c.close()
    if not killed.is_set():
        s.kill9()
    assert len(acked) >= kill_at, len(acked)
    ids = [sid for sid, _ in acked]
    assert len(set(ids)) == len(ids)

    s.start()          # same db
    s.wait_ready()
    try:
        with s.client() as c:
            for sid, i in acked:
                g = c.get(f"/v1/submissions/{sid}")
                assert g.status_code == 200, f"acknowledged submission {sid} lost after kill -9"
                assert g.json()["tags"]["sample"] == i, "row holds the acknowledged request"
            verdicts = wait_all_done(c, ids, timeout=300)
            bad = {k: v for k, v in verdicts.items() if v != "compiled"}
            assert not bad, f"verdicts after restart: {list(bad.items())[:5]}"
    finally:
        rc = s.stop()
    assert rc == 0, f"exit {rc}:\n{s.log_tail()}"


def test_sigterm_with_jobs_in_flight(tmp_path):
    s = Server(tmp_path / "term").start()
    s.wait_ready()
    with s.client() as c:
        r = c.post("/v1/submissions", json={"submissions": [compile_sub(unique(GOOD_KERNEL)) for _ in range(15)]})
        assert r.status_code == 202, r.text
        ids = r.json()["ids"]
        time.sleep(0.3)         # let the first compile start
    t0 = time.monotonic()
    rc = s.stop(signal.SIGTERM)
    assert rc == 0, f"SIGTERM with jobs in flight: exit {rc}\n{s.log_tail()}"
    assert time.monotonic() - t0 < 30 * SLOW
    s.start()
    s.wait_ready()
    try:
        with s.client() as c:
            verdicts = wait_all_done(c, ids, timeout=120)
            assert set(verdicts.values()) == {"compiled"}, verdicts
    finally:
        rc = s.stop()
    assert rc == 0


def test_long_poll_answered_on_shutdown(tmp_path):
    s = Server(tmp_path / "poll").start()
    s.wait_ready()
    with s.client() as c:
        sid = accepted(c.post("/v1/submissions", json=full_sub(c)))     # never done without a GPU
    result = {}

    def poll():
        try:
            with httpx.Client(base_url=s.url, timeout=60) as c:
                t0 = time.monotonic()
                r = c.get(f"/v1/submissions/{sid}", params={"wait": 60})
                result["status"] = r.status_code
                result["body"] = r.text
                result["elapsed"] = time.monotonic() - t0
        except httpx.HTTPError as e:
            result["error"] = repr(e)

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(1.0 * SLOW)   # connected and parked (a slow build accepts and parses slowly)
    assert th.is_alive(), f"the waiter returned early: {result}"
    rc = s.stop(signal.SIGTERM)
    th.join(30)
    assert rc == 0, f"exit {rc}\n{s.log_tail()}"
    assert "error" not in result, f"long-poll waiter got {result.get('error')} instead of an answer"
    assert result["status"] in (200, 503), result
    if result["status"] == 200:
        assert '"state"' in result["body"], result
    assert result["elapsed"] < 30, result


# ---- a full disk -------------------------------------------------------------

HERE = Path(__file__).resolve().parent


def slow_source(depth=13):
    """A finite compile that takes a second or more (2^depth distinct instantiations); unique."""
    return ("template<class T> struct L {};\n"
            "template<class T> struct R {};\n"
            "template<int D, class T> struct E { static const int v = E<D-1, L<T> >::v + E<D-1, R<T> >::v; };\n"
            "template<class T> struct E<0, T> { static const int v = 1; };\n"
            f'extern "C" __global__ void k(int *x) {{ x[0] = E<{depth}, int>::v; }}\n'
            f"// {uuid.uuid4().hex}\n")


def full_disk_env(tmp_path, db_dir):
    """LD_PRELOAD enospc_preload.c into the server: writes to @db_dir/k.db* fail with ENOSPC while
    the returned flag file exists."""
    so = tmp_path / "enospc_preload.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(so), str(HERE / "enospc_preload.c"), "-ldl"],
                   check=True, capture_output=True, timeout=60)
    flag = tmp_path / "disk-is-full"
    env = {"LD_PRELOAD": str(so), "KEVALD_TEST_ENOSPC_FLAG": str(flag),
           "KEVALD_TEST_ENOSPC_MATCH": str(db_dir / "k.db")}
    if SANITIZED:   # the sanitizer runtime wants to come first; this library only wraps libc's writes
        env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
    return env, flag


def wait_states(c, ids, states, timeout):
    deadline = time.monotonic() + timeout * SLOW
    while True:
        got = {sid: c.get(f"/v1/submissions/{sid}").json() for sid in ids}
        if all(b["state"] in states for b in got.values()) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


@pytest.mark.skipif(PG_STORE, reason="a full disk under the SQLite store; PostgreSQL restarts: tests/fleet")
def test_full_disk_strands_no_acknowledged_job(tmp_path):
    """Jobs claimed before the disk fills finish once it has room again, without a restart (the
    dispatcher keeps a result the store refused and retries it, and claims nothing meanwhile);
    while it is full, a write answers 503 with Retry-After and /readyz says the store cannot write."""
    db_dir = tmp_path / "full"
    env, flag = full_disk_env(tmp_path, db_dir)
    # a lease far longer than the test: only the dispatcher's own retry can finish these jobs
    s = Server(db_dir, ["--compile-workers", "2", "--lease-s", "600"], env=env).start()
    s.wait_ready()
    try:
        with s.client() as c:
            ids = [accepted(c.post("/v1/submissions", json=compile_sub(slow_source()))) for _ in range(4)]
            got = wait_states(c, ids[:2], {"compiling"}, timeout=30)
            assert all(b["state"] == "compiling" for b in got.values()), got
            # every job claimed before the disk fills (a claim is a write: one the dispatcher had
            # not reached yet would stay queued, rightly, and is not what this test is about)
            got = wait_states(c, ids, {"compiling", "done"}, timeout=30)
            assert all(b["state"] in ("compiling", "done") for b in got.values()), got
            flag.touch()                        # the disk is full from now on
            pending = [sid for sid, b in wait_states(c, ids, set(), 0).items() if b["state"] != "done"]
            assert len(pending) >= 2, "the compiles ended before the disk filled: make them slower"
            # the two compiles in flight end; their results cannot be written
            deadline = time.monotonic() + 60 * SLOW
            while "recording the result failed: No space left on device" not in s.log_text():
                assert time.monotonic() < deadline, s.log_tail()
                time.sleep(0.1)
            r = c.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL)))
            assert r.status_code == 503, r.text
            assert r.headers.get("retry-after", "").isdigit(), r.headers
            assert "cannot write" in r.json()["detail"], r.text
            z = s.readyz()
            assert z.status_code == 503 and z.headers.get("retry-after"), z.text
            assert z.json()["store"] == "read-only", z.json()
            assert "No space left on device" in z.json()["reason"], z.json()
            time.sleep(2.0)                     # a few retries fail
            held = {sid: b["state"] for sid, b in wait_states(c, pending, set(), 0).items()}
            assert set(held.values()) == {"compiling"}, held
            flag.unlink()                       # room again
            verdicts = wait_all_done(c, ids, timeout=60)
            assert set(verdicts.values()) == {"compiled"}, verdicts
            assert s.readyz().status_code == 200, s.readyz().text
        assert "kept, retried every" in s.log_text()
    finally:
        if flag.exists():
            flag.unlink()
        rc = s.stop()
    assert rc == 0, f"exit {rc}:\n{s.log_tail()}"


@pytest.mark.skipif(PG_STORE, reason="writes the SQLite file beside the server (the fleet suite restarts PostgreSQL)")
def test_lease_held_by_nobody_goes_back_to_its_queue(tmp_path):
    """A job leased to this process that the dispatcher does not hold (what a claim whose answer was
    lost leaves: PostgreSQL committed it, then the connection was cut) is put back in its queue at
    the next heartbeat; before, the heartbeat renewed it for as long as the process lived."""
    import sqlite3
    s = Server(tmp_path / "ghost", ["--host-id", "ghosthost", "--lease-s", "3"]).start()
    s.wait_ready()
    try:
        with s.client() as c:
            sid = accepted(c.post("/v1/submissions", json=full_sub(c)))
            got = wait_states(c, [sid], {"compiled"}, timeout=60)   # no GPU here: it waits for one
            assert got[sid]["state"] == "compiled", got
            owner = f"ghosthost/kevald-{s.proc.pid}"
            db = sqlite3.connect(str(s.db), timeout=30)
            with db:
                n = db.execute("UPDATE submissions SET state = 'running', lease_owner = ?, lease_expires = ? "
                               "WHERE id = ? AND state = 'compiled'", (owner, time.time() + 3600, sid)).rowcount
            assert n == 1
            deadline = time.monotonic() + 20 * SLOW
            while True:
                state, lease = db.execute("SELECT state, lease_owner FROM submissions WHERE id = ?", (sid,)).fetchone()
                if state == "compiled" and lease is None:
                    break
                assert time.monotonic() < deadline, (state, lease, s.log_tail())
                time.sleep(0.1)
            db.close()
        assert f"job {sid}: leased to this process but held by nobody here" in s.log_text()
    finally:
        rc = s.stop()
    assert rc == 0, f"exit {rc}:\n{s.log_tail()}"


# ---- kevald store copy ---------------------------------------------------------

@pytest.mark.skipif(not PG_STORE, reason="store copy needs a PostgreSQL target (the -pg variant)")
def test_store_copy_refuses_missing_or_foreign_source(tmp_path):
    """A missing --from file is not created and copied as an empty store over the target (with
    --force): the copy exits 2 and the target keeps its submissions; so does a file that is not a
    kevald store."""
    s = Server(tmp_path / "target").start()
    s.wait_ready()
    try:
        with s.client() as c:
            ids = [accepted(c.post("/v1/submissions", json=compile_sub(unique(GOOD_KERNEL)))) for _ in range(3)]
            wait_all_done(c, ids, timeout=60)
        missing = tmp_path / "MISSING.db"
        foreign = tmp_path / "notes.db"
        foreign.write_text("these are not the rows you are looking for\n" * 100)
        for src, why in ((missing, "does not exist"), (foreign, "is not a kevald store")):
            p = subprocess.run([str(KEVALD), "store", "copy", "--from", str(src), "--to", str(s.db), "--force"],
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 2, (p.returncode, p.stderr)
            assert why in p.stderr, p.stderr
        assert not missing.exists(), "store copy created its missing source"
        with s.client() as c:
            for sid in ids:
                r = c.get(f"/v1/submissions/{sid}")
                assert r.status_code == 200 and r.json()["verdict"] == "compiled", r.text
    finally:
        rc = s.stop()
    assert rc == 0, f"exit {rc}:\n{s.log_tail()}"
