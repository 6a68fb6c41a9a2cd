"""
The dispatcher's GPU-worker scheduling (server/dispatch/dispatch.c), end to end with
the real `kevald serve` and the real kevald-compile, and the stand-in kevald-gpu
(tests/pylib/standin_gpu_worker.py, "the fake" below) that speaks the real
frame protocol and logs, per JOB,
its pid, GPU index, job id, [start, end] (CLOCK_MONOTONIC) and the launch_*
fields it received.

What must hold (docs/configuration.md gpu_workers_per_gpu, dispatch.c's
theory of operation):
  * W worker processes per GPU, and only one runs a job at a time: the
    [start, end] intervals of jobs on one GPU never overlap;
  * a process whose RESULT says "exiting" is sent no further job (the one
    already queued in its pipe with gpu_prefetch it never runs: that job runs
    on another worker, no attempt charged) and is restarted; the next job runs on the standby worker: after "timeout" (or
    the unspecific true) not before the exiting process is gone (work may
    still spin on the GPU), after "sticky" at once (the context is dead); a
    process that says it exits and stays is killed after 10 s, its GPU held
    until then; "exiting": false is not exiting;
  * a RESULT without a valid verdict kills its worker, costs the jobs after
    it nothing, and its job ends as internal_error within max_attempts;
  * GPUs run in parallel;
  * the JOB carries launch_timeout_ms, launch_factor and launch_floor_ms
    (launch_factor absent with --launch-factor 0);
  * /readyz has one entry per GPU, aggregated over its workers.

Each server gets its own libexec folder: a symlink to the build's
kevald-compile, and the fake put there as kevald-gpu (standin_gpu_worker's
install()), which writes its log (fake_gpu.log) and reads its knobs
(fake_gpu.json) beside itself, the only place a child can find (the
supervisor scrubs the environment).
"""
import copy
import json
import os
import time
from pathlib import Path

import pytest

import standin_gpu_worker as standin
from conftest import (LIBEXEC, SLOW, VECADD_PLAN, VECADD_SOURCE, VECADD_TASK, Server, compile_sub, nice_of,
                      wait_done)


class FakeGpuServer:
    """A `kevald serve` whose GPU workers are the fake; the fake's log is read back as events."""

    def __init__(self, workdir, gpus="0", per_gpu=2, knobs=None, args=()):
        self.dir = Path(workdir)
        self.libexec = self.dir / "libexec"
        self.libexec.mkdir(parents=True)
        compile_bin = LIBEXEC / "kevald-compile"
        if not compile_bin.exists():
            pytest.fail(f"no kevald-compile at {compile_bin} (build first)")
        os.symlink(compile_bin, self.libexec / "kevald-compile")
        self.log = standin.install(self.libexec, knobs)
        self.n_gpus = len(gpus.split(","))
        self.per_gpu = per_gpu
        # conftest's Server puts "--gpus none" first; a later flag overrides it.
        self.server = Server(self.dir / "srv", ["--libexec", str(self.libexec), "--gpus", gpus,
                                                "--gpu-workers-per-gpu", str(per_gpu), *args])

    def start(self):
        self.server.start()
        self.server.wait_ready()
        self.wait_gpus_ready()
        return self

    def stop(self):
        return self.server.stop()

    def readyz(self):
        with self.server.client() as c:
            r = c.get("/readyz")
        assert r.status_code in (200, 503), r.text
        return r.json()

    def wait_gpus_ready(self, timeout=30.0):
        """Until every worker of every GPU said HELLO (and /readyz says so)."""
        deadline = time.monotonic() + timeout * SLOW
        body = None
        while time.monotonic() < deadline:
            body = self.readyz()
            gpus = body.get("gpus") or []
            hellos = {e["pid"] for e in self.events("hello")}
            if (len(gpus) == self.n_gpus and all(g.get("workers_ready") == self.per_gpu for g in gpus)
                    and len(hellos) >= self.n_gpus * self.per_gpu):
                return body
            time.sleep(0.05)
        pytest.fail(f"GPU workers not ready within {timeout}s: {body}\n{self.server.log_tail()}")

    def events(self, kind=None):
        try:
            lines = self.log.read_text().splitlines()
        except FileNotFoundError:
            return []
        evs = [json.loads(line) for line in lines if line.strip()]
        return [e for e in evs if kind is None or e["ev"] == kind]

    def jobs(self, ids=None):
        """The fake's job events (for @ids only, when given), in start order."""
        js = [e for e in self.events("job") if ids is None or e["id"] in ids]
        return sorted(js, key=lambda e: e["start"])

    def submit(self, subs):
        with self.server.client() as c:
            r = c.post("/v1/submissions", json={"submissions": subs})
        assert r.status_code == 202, r.text
        return r.json()["ids"]

    def wait_all(self, ids, timeout=60.0):
        with self.server.client() as c:
            return {sid: wait_done(c, sid, timeout=timeout) for sid in ids}


def full(marker=None, tag=None):
    """A full-mode submission over an inline vector-add task; @marker picks the fake's verdict."""
    name = "vecadd" if marker is None else f"vecadd_FAKEV_{marker}"
    plan = copy.deepcopy(VECADD_PLAN)
    plan[0]["kernel"] = name
    sub = {"mode": "full", "task_spec": copy.deepcopy(VECADD_TASK), "plan": plan,
           "source": VECADD_SOURCE.replace("void vecadd(", f"void {name}(")}
    if tag is not None:
        sub["tags"] = {"sample": tag}
    return sub


def warm_cache(fs, markers):
    """Compile every candidate (and the reference) first, so a later batch is all cache hits
    and reaches the run stage at once, in id order."""
    subs = [full(None)] + [compile_sub(full(m)["source"]) for m in markers]
    ids = fs.submit(subs)
    done = fs.wait_all(ids)
    for sid, body in done.items():
        assert body["verdict"] in ("correct", "compiled"), body
    return done[ids[0]]["attempts"]  # of a full job that never went back to a queue


def assert_no_overlap(jobs, where):
    """No two [start, end] intervals of @jobs overlap (they are in start order)."""
    for a, b in zip(jobs, jobs[1:]):
        assert b["start"] >= a["end"], (
            f"{where}: job {b['id']} (pid {b['pid']}) started at {b['start']:.4f} while job {a['id']} "
            f"(pid {a['pid']}) ran until {a['end']:.4f}: two jobs ran on one GPU at once")


def assert_queued_jobs_ran_elsewhere(fs, done):
    """With prefetch (the default) a busy worker holds its next JOB in its pipe. A worker that
    then exits, or is killed, reads that frame only while it waits to go (the fake logs it as a
    late frame) and never runs it: the job must have run once on another process, with no
    attempt charged (its `attempts` as a first claim's; the callers check that)."""
    for e in fs.events("late_frame"):
        assert e["type"] == 2, f"a frame other than a JOB sent to a worker that said it exits: {e}"
        if e["id"] not in done:
            continue  # another test's job on the same module-scoped server (checked there)
        res = done[e["id"]]["result"]
        assert res["gpu"]["fake_pid"] != e["pid"], (
            f"job {e['id']} was answered by pid {e['pid']}, which had said it exits: {res}")


def overlaps(a, b):
    return a["start"] < b["end"] and b["start"] < a["end"]


@pytest.fixture(scope="module")
def one_gpu(tmp_module):
    fs = FakeGpuServer(tmp_module / "one_gpu", gpus="0", per_gpu=2,
                       knobs={"work_s": 0.05, "exit_delay_s": 1.0}).start()
    yield fs
    rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


@pytest.fixture(scope="module")
def two_gpus(tmp_module):
    fs = FakeGpuServer(tmp_module / "two_gpus", gpus="0,1", per_gpu=2, knobs={"work_s": 0.15},
                       args=["--launch-factor", "0"]).start()
    yield fs
    rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def test_one_job_at_a_time_per_gpu(one_gpu):
    fs = one_gpu
    first_job = min([e["t"] for e in fs.events("start")], default=float("inf"))
    hellos = {e["pid"] for e in fs.events("hello") if e["gpu"] == 0 and e["t"] < first_job}
    assert len(hellos) == 2, f"2 workers per GPU: HELLO from {hellos} before the first job"
    ids = fs.submit([full(tag=i) for i in range(12)])
    done = fs.wait_all(ids)
    for sid, body in done.items():
        assert body["verdict"] == "correct", body
        assert body["result"]["gpu"]["name"] == "Fake GPU (kevald tests)", body["result"]
    jobs = fs.jobs(set(ids))
    assert sorted(j["id"] for j in jobs) == sorted(ids), "each job ran exactly once"
    assert all(j["gpu"] == 0 and j["blob_ok"] for j in jobs), jobs
    # every compile has a fenced build (worker/compile/fence.h), and the JOB carries it after the plain one
    assert all(j["fenced"] for j in jobs), jobs
    # the result recorded is the one the fake process that ran the job sent
    by_id = {j["id"]: j for j in jobs}
    for sid, body in done.items():
        assert body["result"]["gpu"]["fake_pid"] == by_id[sid]["pid"], (body["result"], by_id[sid])
    assert_no_overlap(jobs, "GPU 0")


def test_job_carries_launch_limits(one_gpu):
    fs = one_gpu
    ids = fs.submit([full()])
    fs.wait_all(ids)
    (job,) = fs.jobs(set(ids))
    assert job["has_launch_factor"] and job["launch_factor"] == 1000, job
    assert job["has_launch_floor"] and job["launch_floor_ms"] == 100, job
    assert job["launch_timeout_ms"] == 10000, job
    assert job["fault_grace_ms"] == 300, job


EXIT_MARKERS = {  # marker: (the fake's verdict, the "exiting" it sends; see tests/pylib/standin_gpu_worker.py)
    "legacy_exit": ("runtime_error", True),
    "runtime_error_exit": ("runtime_error", "sticky"),
    "timeout_exit": ("timeout", "timeout"),
    "timeout_exitnow": ("timeout", "timeout"),
}


def test_exiting_worker(one_gpu):
    """After a RESULT with "exiting", the process is sent no further job (one already queued in
    its pipe runs elsewhere); the next job runs on
    the standby: not before the process is gone when the GPU may still be busy ("timeout", or
    the unspecific true), at once after a sticky fault (the context is dead); the exiting
    worker is restarted. No job is re-queued on the way."""
    fs = one_gpu
    pids_before = {e["pid"] for e in fs.events("hello")}
    attempts = warm_cache(fs, list(EXIT_MARKERS))
    order = []
    for m in EXIT_MARKERS:
        order += [None, None, m]
    order += [None, None]
    ids = fs.submit([full(m) for m in order])
    kinds = dict(zip(ids, order))
    done = fs.wait_all(ids)
    for sid in ids:
        want = EXIT_MARKERS[kinds[sid]][0] if kinds[sid] else "correct"
        assert done[sid]["verdict"] == want, done[sid]
        if kinds[sid]:
            assert f"fake: {kinds[sid]} in job {sid}" in done[sid]["result"]["error"]["message"], done[sid]
        assert done[sid]["attempts"] == attempts, f"job {sid} was re-queued: {done[sid]}"
    assert_queued_jobs_ran_elsewhere(fs, done)

    jobs = fs.jobs(set(ids))
    assert sorted(j["id"] for j in jobs) == sorted(ids), "each job ran exactly once"
    assert_no_overlap(jobs, "GPU 0")
    exits = {e["pid"]: e for e in fs.events("exit")}
    checked = set()
    for i, j in enumerate(jobs):
        if not kinds[j["id"]]:
            continue
        assert j["exiting"] == EXIT_MARKERS[kinds[j["id"]]][1], j
        assert j["pid"] in exits, f"the fake {j['pid']} said exiting but logged no exit"
        gone = exits[j["pid"]]["t"]
        nxt = jobs[i + 1] if i + 1 < len(jobs) else None
        if nxt is None:
            continue
        checked.add(kinds[j["id"]])
        assert nxt["pid"] != j["pid"], f"job {nxt['id']} ran on the process that said it exits ({j['pid']})"
        if j["exiting"] == "sticky":
            assert nxt["start"] < gone, (
                f"job {nxt['id']} waited for pid {j['pid']} to exit ({gone:.4f}) after a sticky fault "
                f"(started {nxt['start']:.4f}): the standby should have started at once")
        else:
            assert nxt["start"] >= gone, (
                f"job {nxt['id']} started at {nxt['start']:.4f} on pid {nxt['pid']}, before pid {j['pid']} "
                f"(exiting {j['exiting']!r} after job {j['id']}) was gone at {gone:.4f}: the GPU was not kept "
                f"reserved")
    assert checked == set(EXIT_MARKERS), f"not every exit kind was followed by a job: {checked}"

    # every exiting worker was restarted: new pids said HELLO, /readyz is back to 2 ready workers
    deadline = time.monotonic() + 30 * SLOW
    new = set()
    while time.monotonic() < deadline:
        new = {e["pid"] for e in fs.events("hello")} - pids_before
        if len(new) >= len(EXIT_MARKERS):
            break
        time.sleep(0.05)
    assert len(new) >= len(EXIT_MARKERS), f"not every exiting worker was restarted: new pids {new}"
    body = fs.wait_gpus_ready()
    assert body["gpus"][0]["restarts"] >= len(EXIT_MARKERS), body


def test_exiting_worker_that_stays_is_killed(one_gpu):
    """A worker that says it exits ("timeout") but stays is killed after the grace (EXIT_GRACE_MS,
    10 s); its GPU stays reserved until then, and the next job runs on the standby."""
    fs = one_gpu
    warm_cache(fs, ["timeout_hang"])
    ids = fs.submit([full(), full("timeout_hang"), full(), full()])
    done = fs.wait_all(ids, timeout=60)
    assert done[ids[1]]["verdict"] == "timeout", done[ids[1]]
    assert all(done[sid]["verdict"] == "correct" for sid in ids if sid != ids[1]), done
    jobs = fs.jobs(set(ids))
    assert_no_overlap(jobs, "GPU 0")
    i = next(i for i, j in enumerate(jobs) if j["id"] == ids[1])
    hung, nxt = jobs[i], jobs[i + 1] if i + 1 < len(jobs) else None
    assert nxt is not None, f"no job ran after it: {[j['id'] for j in jobs]}"
    assert nxt["pid"] != hung["pid"], nxt
    waited = nxt["start"] - hung["end"]
    assert 9.9 <= waited < 10 + 10 * SLOW, f"the next job started {waited:.2f}s after the RESULT (want the 10 s grace)"
    assert_queued_jobs_ran_elsewhere(fs, done)
    assert f"(pid {hung['pid']}): did not exit after saying it would" in fs.server.log_tail(1000), fs.server.log_tail()
    deadline = time.monotonic() + 30 * SLOW
    while hung["pid"] in {e["pid"] for e in fs.events("hello")} and time.monotonic() < deadline:
        if len({e["pid"] for e in fs.events("hello") if e["t"] > hung["end"]}) >= 1:
            break
        time.sleep(0.05)
    assert {e["pid"] for e in fs.events("hello") if e["t"] > hung["end"]}, "the killed worker was not restarted"


def test_exiting_false_is_not_exiting(one_gpu):
    """"exiting": false says the process goes on: it keeps its jobs, its GPU is not held."""
    fs = one_gpu
    warm_cache(fs, ["exiting_false"])
    ids = fs.submit([full(), full("exiting_false"), full(), full()])
    done = fs.wait_all(ids)
    assert all(b["verdict"] == "correct" for b in done.values()), done
    jobs = fs.jobs(set(ids))
    assert sorted(j["id"] for j in jobs) == sorted(ids), "each job ran exactly once"
    assert_no_overlap(jobs, "GPU 0")
    i = next(i for i, j in enumerate(jobs) if j["id"] == ids[1])
    said = jobs[i]
    assert said["exiting"] is False, said
    assert i + 1 < len(jobs), f"no job ran after it: {[j['id'] for j in jobs]}"
    gap = jobs[i + 1]["start"] - said["end"]
    assert gap < 2.0 * SLOW, f"the next job waited {gap:.2f}s after a RESULT with \"exiting\": false"
    assert said["pid"] not in {e["pid"] for e in fs.events("exit")}, "the fake never exits on its own here"
    assert f"(pid {said['pid']}): did not exit" not in fs.server.log_tail(1000), "it was killed for not exiting"


def test_gpus_run_in_parallel(two_gpus):
    fs = two_gpus
    ids = fs.submit([full(tag=i) for i in range(16)])
    done = fs.wait_all(ids)
    assert all(b["verdict"] == "correct" for b in done.values()), done
    jobs = fs.jobs(set(ids))
    assert sorted(j["id"] for j in jobs) == sorted(ids), "each job ran exactly once"
    per = {g: [j for j in jobs if j["gpu"] == g] for g in (0, 1)}
    assert per[0] and per[1], f"jobs ran on both GPUs: {[(j['id'], j['gpu']) for j in jobs]}"
    # the worker sees its GPU as device 0; the supervisor reports the host's index
    assert all(done[j["id"]]["result"]["gpu"]["index"] == j["gpu"] for j in jobs), \
        [(j["id"], j["gpu"], done[j["id"]]["result"]["gpu"]) for j in jobs]
    for g, js in per.items():
        assert_no_overlap(js, f"GPU {g}")
    assert any(overlaps(a, b) for a in per[0] for b in per[1]), "the two GPUs never ran jobs at the same time"
    hellos = {}
    for e in fs.events("hello"):
        hellos.setdefault(e["gpu"], set()).add(e["pid"])
    assert {g: len(p) for g, p in hellos.items()} == {0: 2, 1: 2}, hellos


def test_launch_factor_zero_leaves_it_out(two_gpus):
    fs = two_gpus
    ids = fs.submit([full()])
    fs.wait_all(ids)
    (job,) = fs.jobs(set(ids))
    assert not job["has_launch_factor"], job
    assert job["launch_timeout_ms"] == 10000, job


def test_readyz_one_entry_per_gpu(one_gpu, two_gpus):
    for fs in (one_gpu, two_gpus):
        body = fs.wait_gpus_ready()
        gpus = body["gpus"]
        assert sorted(g["index"] for g in gpus) == list(range(fs.n_gpus)), gpus
        for g in gpus:
            assert g["workers"] == 2 and g["workers_ready"] == 2, g
            assert g["state"] in ("ready", "busy"), g
            assert g["name"] == "Fake GPU (kevald tests)" and g["arch"] == "sm_90a", g
            assert isinstance(g["restarts"], int) and isinstance(g["busy_s"], (int, float)), g
        assert body["gpus_available"] == fs.n_gpus and body["mode"] == "full", body
        assert body["layers"]["gpu"]["sandbox"]["detail"].startswith("fake GPU worker"), body["layers"]
    # a GPU that ran jobs has its workers' busy time
    for fs in (one_gpu, two_gpus):
        ran = {j["gpu"] for j in fs.jobs()}
        for g in fs.readyz()["gpus"]:
            assert (g["busy_s"] > 0) == (g["index"] in ran), (g, ran)


def test_watchdog_kill_holds_the_gpu(tmp_path):
    """A job that never answers: the watchdog (job_timeout_s + 5 s grace) kills its worker, the
    verdict is timeout, and the GPU stays reserved until that process is gone."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=2, knobs={"work_s": 0.02}, args=["--job-timeout-s", "1"]).start()
    try:
        attempts = warm_cache(fs, ["hang"])
        t_submit = time.monotonic()   # before the server sends the hung job: its watchdog counts from then
        ids = fs.submit([full("hang"), full(), full()])
        done = fs.wait_all(ids, timeout=60)
        hang = done[ids[0]]
        assert hang["verdict"] == "timeout", hang
        assert "did not finish within" in hang["result"]["error"]["message"], hang["result"]["error"]
        for sid in ids:
            assert done[sid]["attempts"] == attempts, f"job {sid} was re-queued: {done[sid]}"
        assert all(done[sid]["verdict"] == "correct" for sid in ids[1:]), done
        (started,) = [e for e in fs.events("start") if e["id"] == ids[0]]
        jobs = fs.jobs(set(ids[1:]))
        assert all(j["pid"] != started["pid"] for j in jobs), (started, jobs)
        first = jobs[0]["start"] - t_submit
        assert first >= 6.0, f"a job started {first:.2f}s after the hung one was submitted, before its worker was killed (6 s)"
        assert_queued_jobs_ran_elsewhere(fs, done)
        assert f"(pid {started['pid']}): watchdog" in fs.server.log_tail(1000), fs.server.log_tail()
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def gpu_times(fs):
    """/readyz gpus[0].time_s and the monotonic time it was read, once the GPU's running time
    stands still (the status is rebuilt every 100 ms tick: the job just done may still be in it)."""
    deadline = time.monotonic() + 10 * SLOW
    (g,) = fs.readyz()["gpus"]
    while time.monotonic() < deadline:
        time.sleep(0.15)
        (h,) = fs.readyz()["gpus"]
        if h["time_s"]["running"] == g["time_s"]["running"] and h["state"] == "ready":
            break
        g = h
    return time.monotonic(), h["time_s"]


def test_gpu_time_accounting(tmp_path):
    """/readyz says where each GPU's time went: running (a job in flight, or a timed-out worker
    still holding the GPU), no_worker (none ready: the restart after a timeout, with one worker
    per GPU) and no_work (ready, nothing to run). The three add up to the time that passed."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=1, knobs={"work_s": 0.1, "exit_delay_s": 0.3}).start()
    try:
        warm_cache(fs, ["timeout_exit"])
        fs.wait_gpus_ready()
        t0, a = gpu_times(fs)
        assert set(a) == {"running", "no_worker", "no_work"}, a
        assert a["no_worker"] > 0, f"the worker's start-up is time without a worker: {a}"
        ids = fs.submit([full(), full("timeout_exit"), full()])
        done = fs.wait_all(ids)
        assert [done[i]["verdict"] for i in ids] == ["correct", "timeout", "correct"], done
        fs.wait_gpus_ready()
        time.sleep(0.5)
        t1, b = gpu_times(fs)
        d = {k: b[k] - a[k] for k in a}
        # three jobs of 0.1 s, and the timed-out worker holds the GPU until it has exited (0.3 s later):
        # 0.6 s, less what the dispatcher sees of each edge a loop turn late
        assert d["running"] >= 0.55, d
        # one worker per GPU: the job after the timeout waits for a new process
        assert d["no_worker"] > 0.005, d
        assert d["no_work"] >= 0.5 - 0.1 * SLOW, d
        # the status is rebuilt every 100 ms tick: each reading may lag by that much, more on a slow build
        assert abs(sum(d.values()) - (t1 - t0)) < 0.2 + 0.1 * SLOW, (d, t1 - t0)
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def test_fault_grace_adapts(tmp_path):
    """A fault that surfaced 250 ms into the grace raises the grace of every later job to 1.5x
    that (375 ms), never below the configured one; /readyz says the grace jobs get now."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=2, knobs={"work_s": 0.01}).start()
    try:
        warm_cache(fs, ["late_fault_exit"])
        assert fs.readyz()["fault_grace_ms"] == 300
        ids = fs.submit([full(), full("late_fault_exit"), full(), full()])
        done = fs.wait_all(ids)
        assert [done[i]["verdict"] for i in ids] == ["correct", "runtime_error", "correct", "correct"], done
        assert done[ids[1]]["result"]["error"]["grace_used_ms"] == 250.0, done[ids[1]]
        grace = {j["id"]: j["fault_grace_ms"] for j in fs.jobs(set(ids))}
        assert [grace[i] for i in ids] == [300, 300, 375, 375], grace
        assert fs.readyz()["fault_grace_ms"] == 375
        assert "fault_grace_ms 300 -> 375" in fs.server.log_tail(1000), fs.server.log_tail()
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def test_fence_off_sends_the_plain_build_only(tmp_path):
    """With fence = false the JOB carries no fenced build (the plain one runs in every phase)."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=1, knobs={"work_s": 0.01}, args=["--fence=false"]).start()
    try:
        ids = fs.submit([full(tag=i) for i in range(2)])
        done = fs.wait_all(ids)
        assert all(done[i]["verdict"] == "correct" for i in ids), done
        jobs = fs.jobs(set(ids))
        assert len(jobs) == 2 and all(j["blob_ok"] and not j["fenced"] for j in jobs), jobs
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def test_result_for_another_job_is_not_believed(tmp_path):
    """A RESULT is matched to the job in flight by its id (with prefetch two JOBs may be in a
    worker's pipe): one that names another job kills its worker and is never recorded; the job
    ends internal_error within max_attempts, and the jobs around it are not charged."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=2, knobs={"work_s": 0.02}).start()
    try:
        attempts = warm_cache(fs, ["wrong_id"])
        ids = fs.submit([full("wrong_id")] + [full(tag=i) for i in range(3)])
        done = fs.wait_all(ids, timeout=30)
        assert done[ids[0]]["verdict"] == "internal_error", done[ids[0]]
        assert "answers job" in done[ids[0]]["result"]["error"]["message"], done[ids[0]]["result"]["error"]
        for sid in ids[1:]:
            assert done[sid]["verdict"] == "correct" and done[sid]["attempts"] == attempts, done[sid]
        assert "not job %d in flight" % ids[0] in fs.server.log_tail(2000), fs.server.log_tail()
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def test_invalid_verdict_does_not_hurt_the_next_job(tmp_path):
    """A RESULT without a valid verdict kills its worker; the job after it must not pay for that,
    and the offending job ends (internal_error) within max_attempts instead of cycling forever."""
    fs = FakeGpuServer(tmp_path, gpus="0", per_gpu=2, knobs={"work_s": 0.02}).start()
    try:
        attempts = warm_cache(fs, ["bogus"])
        ids = fs.submit([full("bogus")] + [full(tag=i) for i in range(4)])
        bogus, innocent = ids[0], ids[1:]
        done = fs.wait_all(innocent, timeout=30)
        jobs = fs.jobs(set(ids))
        starts = [e for e in fs.events("start") if e["id"] in ids]
        killed_at = {j["pid"]: j["end"] for j in jobs if j["verdict"] == "bogus"}
        for sid in innocent:
            assert done[sid]["verdict"] == "correct", (done[sid]["verdict"], done[sid]["result"]["error"])
            assert done[sid]["attempts"] == attempts, f"job {sid} was re-queued: {done[sid]}"
            # a job that was next in the killed worker's pipe may have run there (prefetch), but
            # the answer believed comes from a process that had not yet sent an invalid verdict
            pid = done[sid]["result"]["gpu"]["fake_pid"]
            (answer,) = [j for j in jobs if j["id"] == sid and j["pid"] == pid]
            assert answer["end"] <= killed_at.get(pid, float("inf")), (sid, answer, killed_at)
        for j in jobs:
            if j["verdict"] != "bogus":
                continue
            later = [k for k in starts if k["pid"] == j["pid"] and k["t"] > j["start"]]
            assert len(later) <= 1, (f"jobs {[k['id'] for k in later]} were sent to pid {j['pid']} after it "
                                     f"answered job {j['id']} with an invalid verdict (one may have been queued)")
        with fs.server.client() as c:
            end = wait_done(c, bogus, timeout=30)
        assert end["verdict"] == "internal_error", end
        runs = [j for j in fs.jobs({bogus})]
        assert len(runs) <= 3, f"the invalid-verdict job ran {len(runs)} times (max_attempts 3)"
    finally:
        rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


@pytest.mark.parametrize("prefetch", [True, False])
def test_next_job_waits_in_the_busy_workers_pipe(tmp_path, prefetch):
    """With gpu_prefetch (the default) a busy GPU worker is sent its next job while it runs the
    current one (/readyz gpus[].queued names it), so it starts the next one the moment it answers,
    without a round trip through the dispatcher; each job still runs once, alone on its GPU, on its
    first claim. Off: a worker gets a job only when idle (queued stays null)."""
    # a short lease: heartbeats every ~0.3 s check that every lease renewed is a job held (queued too)
    fs = FakeGpuServer(tmp_path / "prefetch", gpus="0", per_gpu=2, knobs={"work_s": 0.3},
                       args=["--lease-s", "1"] + ([] if prefetch else ["--gpu-prefetch=false"])).start()
    try:
        attempts = warm_cache(fs, [])
        ids = fs.submit([full(tag=i) for i in range(5)])
        seen = set()
        deadline = time.monotonic() + 60 * SLOW
        while time.monotonic() < deadline and len(fs.jobs(set(ids))) < len(ids):
            g = fs.readyz()["gpus"][0]
            assert "queued" in g, g
            if g["queued"] is not None:
                seen.add(g["queued"])
            time.sleep(0.02)
        done = fs.wait_all(ids)
        assert all(done[sid]["verdict"] == "correct" and done[sid]["attempts"] == attempts for sid in ids), done
        jobs = fs.jobs(set(ids))
        assert sorted(j["id"] for j in jobs) == sorted(ids), "each job ran exactly once"
        assert_no_overlap(jobs, "GPU 0")
        if prefetch:
            assert len(seen) >= 2 and seen <= set(ids[1:]), f"queued jobs seen in /readyz: {seen}"
            # the queued job was in the pipe: the worker read it as soon as it had answered
            gaps = [b["start"] - a["end"] for a, b in zip(jobs, jobs[1:]) if a["pid"] == b["pid"]]
            assert gaps and max(gaps) < 0.25 * SLOW, gaps
        else:
            assert not seen, f"queued with gpu_prefetch off: {seen}"
        assert "a claimed job was dropped" not in fs.server.log_tail(5000), fs.server.log_tail()
    finally:
        assert fs.stop() == 0, fs.server.log_tail()


def test_queued_job_of_an_exiting_worker_runs_on_the_standby(tmp_path):
    """A worker that says it exits after a sticky fault never runs the job queued in its pipe:
    that job keeps its claim (no attempt charged, not re-queued through the store) and runs once,
    on the standby of the same GPU; the queued job of a worker killed by the watchdog likewise."""
    fs = FakeGpuServer(tmp_path / "orphan", gpus="0", per_gpu=2, knobs={"work_s": 0.3, "exit_delay_s": 0.5},
                       args=["--job-timeout-s", "1"]).start()
    try:
        attempts = warm_cache(fs, ["runtime_error_exit", "hang"])
        ids = fs.submit([full("runtime_error_exit"), full(tag=1), full("hang"), full(tag=2)])
        done = fs.wait_all(ids, timeout=60)
        assert done[ids[0]]["verdict"] == "runtime_error", done[ids[0]]
        assert done[ids[2]]["verdict"] == "timeout", done[ids[2]]
        for sid in (ids[1], ids[3]):
            assert done[sid]["verdict"] == "correct", done[sid]
        for sid in ids:
            assert done[sid]["attempts"] == attempts, f"job {sid} was re-queued: {done[sid]}"
        late = {e["id"]: e for e in fs.events("late_frame")}
        assert ids[1] in late and ids[3] in late, (
            f"the job after each exiting/killed one should have been queued in its pipe: {late}")
        assert_queued_jobs_ran_elsewhere(fs, done)
        # after a sticky fault the queued job goes to the standby at once, not when the process is gone
        (first,) = fs.jobs({ids[0]})
        (gone,) = [e for e in fs.events("exit") if e["pid"] == first["pid"]]
        (second,) = fs.jobs({ids[1]})
        assert second["pid"] != first["pid"] and second["start"] < gone["t"], (first, second, gone)
        runs = fs.jobs(set(ids))
        assert sorted(j["id"] for j in runs if j["id"] in (ids[1], ids[3])) == sorted([ids[1], ids[3]]), runs
        assert_no_overlap(runs, "GPU 0")
    finally:
        assert fs.stop() == 0, fs.server.log_tail()


@pytest.mark.parametrize("nice", [None, 0, 7])
def test_compile_workers_run_at_a_lower_priority(tmp_path, nice):
    """Compile workers run niced (compile_nice, default 10), so that a burst of compiles on every
    core does not starve the GPU workers and the dispatcher; the GPU workers keep the server's own
    priority. 0 leaves the compile workers at the server's."""
    fs = FakeGpuServer(tmp_path / "nice", gpus="0", per_gpu=1,
                       args=[] if nice is None else ["--compile-nice", str(nice)]).start()
    try:
        own = nice_of(fs.server.proc.pid)
        compile_pids = fs.server.worker_pids("kevald-compile")
        gpu_pids = fs.server.worker_pids("python3")  # the fake kevald-gpu, run by /usr/bin/env python3
        assert compile_pids and gpu_pids, (compile_pids, gpu_pids)
        want = min(19, own + 10) if nice is None else (own + nice if nice else own)
        assert [nice_of(p) for p in compile_pids] == [want] * len(compile_pids), (own, compile_pids)
        assert [nice_of(p) for p in gpu_pids] == [own] * len(gpu_pids), (own, gpu_pids)
    finally:
        assert fs.stop() == 0, fs.server.log_tail()
