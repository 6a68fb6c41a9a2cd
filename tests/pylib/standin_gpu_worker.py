#!/usr/bin/env python3
"""
The stand-in for kevald-gpu that every test without a GPU uses: the
dispatcher's scheduling tests, the reward and yardstick tests, the dashboard
(integration and browser), the forged-result tests of the hostile suite and
the fleet test (and bench/store through tests/fleet/fleetlib.py). No GPU runs
anything; the candidate's kernel name says what the stand-in reports.

It speaks the real child protocol (common/frame.h, through frames.py) on fds
0 and 1: HELLO as worker/gpu/gpu_main.c sends it, then a PROGRESS and one
RESULT per JOB, until end of input or SHUTDOWN.

A test puts it in place with install(LIBEXEC, knobs): this file copied as
LIBEXEC/kevald-gpu, frames.py beside it, the knobs in LIBEXEC/fake_gpu.json;
the server is pointed at it with `--libexec LIBEXEC` (a kevald-compile there
too: a symlink to the build's). The supervisor scrubs the environment of its
children, so everything the test controls or reads lives in that folder,
found from this file's path as it was executed:

  fake_gpu.json  optional knobs (defaults in KNOBS):
                 work_s        seconds each JOB "runs" (0.05)
                 exit_delay_s  seconds an exiting worker waits before it exits (0.3)
                 slow_s        seconds a FAKEV_slow JOB waits before it starts (0.5)
                 name          the device name in HELLO and in every RESULT's gpu.name
                               ("Fake GPU (kevald tests)"; its baseline slug is
                               fake-gpu-kevald-tests)
                 standin       true: every RESULT says gpu.standin true (the dashboard
                               badges it "stand-in result") (false)
  fake_gpu.log   one JSON object per line, appended (O_APPEND, one write each); times
                 are time.monotonic() (CLOCK_MONOTONIC: one clock for every process of
                 the machine):
                 {"ev": "hello", "pid", "gpu", "t", "argv"}
                 {"ev": "start", "pid", "gpu", "id", "t"} on receipt of a JOB (a worker
                   killed mid-job leaves only that line)
                 {"ev": "job", "pid", "gpu", "id", "start", "end", "verdict", "exiting",
                  "kernels", "launch_timeout_ms", "launch_factor", "launch_floor_ms",
                  "has_launch_factor", "has_launch_floor", "deadline_ms", "fault_grace_ms",
                  "blob_ok", "fenced", "job_keys"} just before its RESULT is written
                 {"ev": "sent", "pid", "gpu", "id", "t"} just after: the moment the result
                   left the GPU side (the fleet test measures long-poll wake-ups from it)
                 {"ev": "late_frame", "pid", "gpu", "t", "type", "id"} a frame received after
                   an exiting RESULT, while waiting to exit
                 {"ev": "exit", "pid", "gpu", "t", "code", "id"} just before _exit
                 {"ev": "eof"|"shutdown", "pid", "gpu", "t"}
                 {"ev": "unexpected_frame", "pid", "gpu", "t", "type"} (then exit 2)

The verdict comes from the candidate's kernel name (the only part of the
source a JOB carries besides the CUBIN): a name containing `FAKEV_<marker>`
picks
  correct (default)     "correct", with timing.speedup 1.0 (one shape set, medians 1 ms)
  exiting_false         "correct" with an explicit "exiting": false (and no exit)
  timed                 "correct" with the JOB's first shape set timed: candidate
                        median 0.5 ms, reference 1.0 ms (speedup 2.0), roofline
                        min_ms 0.1
  s<N>                  "correct" at speedup N / 100 (s150: 1.50x) with everything the
                        submission view shows: every shape set checked and timed
                        (statistics for candidate and reference), resources
  slow                  "correct" as the default, after waiting slow_s before the job
                        starts (so that long-polls are parked before it ends)
  suspicious            "correct" with timing.speedup 40.0 faster than the roofline
                        allows: timing.suspicious true, a note, and shape
                        "default" with roofline.suspicious true (as worker/gpu/judge.c)
  incorrect             "incorrect" (a mismatch, no details)
  bad                   "incorrect": 17 of 4096 elements of buffer c outside the tolerance,
                        with the first mismatches and resources
  runtime_error_exit    "runtime_error", "exiting": "sticky", exit 3 after exit_delay_s
  late_fault_exit       the same at once, its error saying the fault surfaced 250 ms
                        into the fault grace (after_limit, grace_used_ms)
  timeout_exit          "timeout", "exiting": "timeout", exit 4 after exit_delay_s
  timeout_exitnow       "timeout", "exiting": "timeout", exit 4 at once (like the
                        real worker's _exit right after its RESULT)
  legacy_exit           "runtime_error", "exiting": true, exit 3 after exit_delay_s
  timeout_hang          "timeout", "exiting": "timeout", and never exits
  hang                  no RESULT at all (only the "start" line is logged)
  bogus                 an invalid verdict "bogus" (the supervisor must kill us)
  wrong_id              "correct", but the RESULT names another job's id (the supervisor must
                        kill us: with a job queued behind one, a RESULT is matched by its id)
  forged_speedup        "correct" with speedup 1e308 over medians of 1 ms and 1 ms
  forged_roofline       "correct", speedup 1000 from its medians, the candidate 100x
                        under its roofline bound and not flagged suspicious
  forged_correct        "correct" with correctness 7 (not an object)
  (the forged ones: the supervisor must not believe them; server/dispatch/resultcheck.c)
  anything else         "internal_error" naming the unknown marker
The GPU index is CUDA_VISIBLE_DEVICES (the supervisor pins each worker to
one device that way); the RESULT's gpu.fake_pid says which process ran the job.
"""
import os
import select
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # frames.py, beside this file
import frames  # noqa: E402

KNOBS = {"work_s": 0.05, "exit_delay_s": 0.3, "slow_s": 0.5, "name": "Fake GPU (kevald tests)", "standin": False}
FAKE_GPU = KNOBS["name"]
LOG_NAME, KNOBS_NAME = "fake_gpu.log", "fake_gpu.json"

# marker: (verdict, the RESULT's "exiting", exit status, wait exit_delay_s before exiting).
# The real worker (worker/gpu/gpu_main.c) says "timeout" (work may still run on the
# GPU until the process is gone) or "sticky" (the context is dead); `true` is
# the older, unspecific form.
EXITS = {
    "runtime_error_exit": ("runtime_error", "sticky", 3, True),
    "timeout_exit": ("timeout", "timeout", 4, True),
    "timeout_exitnow": ("timeout", "timeout", 4, False),
    "legacy_exit": ("runtime_error", True, 3, True),
    "timeout_hang": ("timeout", "timeout", 4, None),  # says it exits, never does (killed)
    "late_fault_exit": ("runtime_error", "sticky", 3, False),  # a fault that surfaced 250 ms into the grace
}
REF_MS = 0.0480  # the reference median of an s<N> result's first shape set


def install(libexec, knobs=None):
    """Put the stand-in in the folder @libexec as kevald-gpu, frames.py beside it, and write
    @knobs (a dict, see fake_gpu.json above) there. Returns the path of its log (fake_gpu.log)."""
    frames.install_standin(__file__, libexec, "kevald-gpu", KNOBS_NAME, knobs)
    return Path(libexec) / LOG_NAME


# ---- what a JOB asks for ------------------------------------------------------

def candidate_kernels(job):
    names = []
    for shape in job.get("shapes") or []:
        for step in (shape.get("candidate") or {}).get("plan") or []:
            if "kernel" in step:
                names.append(step["kernel"])
    return names


def marker(kernels):
    for k in kernels:
        if "FAKEV_" in k:
            return k.split("FAKEV_", 1)[1]
    return "correct"


def shape_names(job):
    return [s.get("name", "default") for s in job.get("shapes") or []] or ["default"]


def blob_ok(job, blob):
    """The blob is the candidate CUBIN, its fenced build (when cubins.candidate_fenced
    says so), then the reference CUBIN, as `cubins` says; every part an ELF."""
    c = (job.get("cubins") or {}).get("candidate") or {}
    f = (job.get("cubins") or {}).get("candidate_fenced") or {}
    r = (job.get("cubins") or {}).get("reference") or {}
    co, cs, ro, rs = c.get("offset"), c.get("size"), r.get("offset", 0), r.get("size", 0)
    fo, fs = f.get("offset", cs), f.get("size", 0)
    if not isinstance(cs, int) or cs <= 0 or co != 0 or fo != cs or ro != cs + fs or co + cs + fs + rs != len(blob):
        return False
    return all(blob[o:o + 4] == b"\x7fELF" for o, n in ((co, cs), (fo, fs), (ro, rs)) if n)


# ---- the RESULT for a marker ----------------------------------------------------

def one_ms_timing(speedup=1.0, roofline=True):
    """Timing of shape "default" with both medians at 1 ms, claiming @speedup."""
    shape = {"shape": "default", "speedup": speedup, "stop": "precision",
             "candidate": {"median_ms": 1.0, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10}}
    if roofline:
        shape["roofline"] = {"min_ms": None, "suspicious": False}
    return {"speedup": speedup, "shapes": [shape]}


PASSED = {"passed": True, "shapes": [{"shape": "default", "passed": True}]}


def side(ms, trials):
    """A timing side with every statistic the submission view shows."""
    return {"median_ms": ms, "mean_ms": ms * 1.02, "stdev_ms": ms * 0.03, "min_ms": ms * 0.97,
            "max_ms": ms * 1.15, "trials": trials, "precision": 0.008}


def resources(kernels):
    return [{"kernel": k, "registers": 18, "shared_static": 0, "shared_dynamic": 0, "local": 0, "spill_stores": 0,
             "max_threads_per_block": 1024, "block": 256,
             "occupancy": {"blocks_per_sm": 8, "warps_per_sm": 64, "fraction": 1.0}} for k in kernels]


def buffers(mismatches):
    first = [{"index": 17 + 64 * i, "got": 0.5 + i, "want": 1.25 + i} for i in range(3)] if mismatches else []
    return [{"name": "c", "max_abs": 0.75 if mismatches else 0.0, "max_rel": 0.6 if mismatches else 0.0,
             "mismatches": mismatches, "count": 4096, "nan_inf_mismatches": 0, "first_mismatches": first}]


def result_for(job, mark, t0, t1, gpu):
    """The RESULT of @job for @mark, run from @t0 to @t1 on the device described by @gpu (a dict)."""
    base = {"id": job.get("id"), "seed": job.get("seed"), "gpu_busy_ms": (t1 - t0) * 1000,
            "wall_ms": (t1 - t0) * 1000, "cleanup": {"allocations_left": 0}, "gpu": gpu, "resources": None}
    kernels = candidate_kernels(job)
    if mark in ("correct", "exiting_false", "slow"):
        if mark == "exiting_false":
            base["exiting"] = False  # said explicitly: this process goes on
        base.update(verdict="correct", correctness=PASSED, timing=one_ms_timing())
    elif mark == "timed":
        shape = ((job.get("shapes") or [{}])[0]).get("name", "default")
        base.update(verdict="correct", correctness={"passed": True, "shapes": [{"shape": shape, "passed": True}]},
                    timing={"speedup": 2.0, "shapes": [{"shape": shape, "speedup": 2.0, "stop": "precision",
                                                         "candidate": {"median_ms": 0.5, "trials": 10},
                                                         "reference": {"median_ms": 1.0, "trials": 10},
                                                         "roofline": {"min_ms": 0.1, "suspicious": False}}]})
    elif mark.startswith("s") and mark[1:].isdigit() and int(mark[1:]) > 0:
        speedup = int(mark[1:]) / 100.0
        cand, trials, names = REF_MS / speedup, 120, shape_names(job)
        base.update(verdict="correct", resources=resources(kernels[:1]), error=None,
                    correctness={"passed": True, "shapes": [
                        {"shape": n, "passed": True, "trials": 3, "guard_ok": True, "inputs_intact": True,
                         "deterministic": True, "revalidated": True, "buffers": buffers(0)} for n in names]},
                    timing={"speedup": speedup, "shapes": [
                        {"shape": n, "candidate": side(cand * (1 + 0.1 * i), trials),
                         "reference": side(REF_MS * (1 + 0.1 * i), trials), "speedup": speedup, "stop": "precision",
                         "roofline": {"min_ms": 0.001, "suspicious": False}} for i, n in enumerate(names)]},
                    gpu_busy_ms=(cand + REF_MS) * trials * len(names))
    elif mark == "suspicious":
        base.update(verdict="correct", correctness={"passed": True, "shapes": []},
                    timing={"speedup": 40.0, "suspicious": True,
                            "note": "the candidate ran faster than half the roofline bound (fake)",
                            "shapes": [{"shape": "default", "speedup": 40.0, "stop": "precision",
                                        "candidate": {"median_ms": 0.001, "trials": 10},
                                        "reference": {"median_ms": 0.04, "trials": 10},
                                        "roofline": {"min_ms": 0.01, "suspicious": True}}]})
    elif mark == "incorrect":
        base.update(verdict="incorrect", correctness={"passed": False, "shapes": []}, timing=None,
                    error={"kind": "mismatch", "message": f"fake: job {job.get('id')} mismatched"})
    elif mark == "bad":
        first = shape_names(job)[0]
        base.update(verdict="incorrect", resources=resources(kernels[:1]), timing=None,
                    correctness={"passed": False, "shapes": [
                        {"shape": first, "passed": False, "trials": 1, "guard_ok": True, "inputs_intact": True,
                         "deterministic": None, "revalidated": None, "buffers": buffers(17)}]},
                    error={"kind": "mismatch", "buffer": "c", "mismatches": 17, "count": 4096,
                           "nan_inf_mismatches": 0, "shape": first,
                           "message": "17 of 4096 elements of 'c' differ from the reference"},
                    gpu_busy_ms=0.2)
    elif mark in EXITS:
        verdict, exiting, _, _ = EXITS[mark]
        base.update(verdict=verdict, timing=None, exiting=exiting,
                    error={"kind": verdict, "message": f"fake: {mark} in job {job.get('id')}"})
        if mark == "late_fault_exit":  # as worker/gpu/judge.c reports a fault seen only within fault_grace_ms
            base["error"].update(kind="cuda", name="CUDA_ERROR_ILLEGAL_ADDRESS", surfaced_ms=350.0, after_limit=True,
                                 grace_used_ms=250.0)
    elif mark == "bogus":
        base.update(verdict="bogus")
    elif mark == "wrong_id":
        base.update(id=(job.get("id") or 0) + 1000000, verdict="correct", correctness=PASSED,
                    timing=one_ms_timing())
    elif mark == "forged_speedup":  # a reward its own medians do not back (1 ms against 1 ms)
        base.update(verdict="correct", correctness=PASSED, timing=one_ms_timing(1e308))
    elif mark == "forged_roofline":  # medians that agree, but 100x under the roofline bound and not flagged
        base.update(verdict="correct", correctness=PASSED,
                    timing={"speedup": 1000.0, "suspicious": False, "shapes": [
                        {"shape": "default", "speedup": 1000.0, "stop": "precision",
                         "candidate": {"median_ms": 0.001, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10},
                         "roofline": {"min_ms": 0.1, "suspicious": False}}]})
    elif mark == "forged_correct":  # "correct" whose correctness is not a passed check
        base.update(verdict="correct", correctness=7, timing=one_ms_timing(roofline=False))
    else:
        base.update(verdict="internal_error", error={"kind": "internal", "message": f"fake: unknown marker {mark!r}"})
    return base


# ---- the process ------------------------------------------------------------------

class StandIn:
    """One stand-in process: its folder (the libexec one it was run from), knobs, log and frames out."""

    def __init__(self):
        self.dir = os.path.dirname(os.path.abspath(sys.argv[0]))
        self.pid = os.getpid()
        self.gpu = int(os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("KEVALD_GPU_INDEX") or 0)
        self.knobs = frames.load_knobs(self.dir, KNOBS_NAME, KNOBS)
        self.out_fd = os.dup(1)  # frames on a private descriptor, as the real worker does

    def log(self, **ev):
        ev.setdefault("pid", self.pid)
        ev.setdefault("gpu", self.gpu)
        frames.log_line(os.path.join(self.dir, LOG_NAME), ev)

    def hello(self):
        return {
            "role": "gpu", "pid": self.pid, "ok": True, "device": 0, "name": self.knobs["name"],
            "cc": "9.0", "arch": "sm_90a", "driver": "fake", "cuda_driver": 13000, "sms": 132,
            "memory_bytes": 85 << 30, "l2_bytes": 50 << 20, "max_shared_optin": 232448,
            "max_threads_per_block": 1024, "max_threads_per_sm": 2048, "cublas": "fake",
            "layers": {"sandbox": {"active": False, "detail": "fake GPU worker (tests/pylib stand-in)"}},
            "worker": {"printf_fifo_bytes": 1 << 20, "l2_flush_bytes": 100 << 20, "guard_bytes": 65536},
        }

    def gpu_json(self):
        # "index" 0 like kevald-gpu: under CUDA_VISIBLE_DEVICES its GPU is device 0
        gpu = {"name": self.knobs["name"], "index": 0, "fake_pid": self.pid}
        if self.knobs["standin"]:
            gpu["standin"] = True
        return gpu

    def late_frames(self, seconds):
        """Wait @seconds before exiting, logging any frame read meanwhile: a process that said it
        exits is sent no further job, but one queued in its pipe before (gpu_prefetch) is read here,
        and must then run on another worker."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ready, _, _ = select.select([0], [], [], left)
            if not ready:
                return
            try:
                fr = frames.read(0)
            except frames.FrameError:
                fr = None
            if fr is None:
                time.sleep(max(0.0, deadline - time.monotonic()))
                return
            job = fr[1] if isinstance(fr[1], dict) else {}
            self.log(ev="late_frame", t=time.monotonic(), type=fr[0], id=job.get("id"))

    def run(self):
        """HELLO, then one RESULT per JOB; the exit status."""
        self.log(ev="hello", t=time.monotonic(), argv=sys.argv[1:])
        frames.write(self.out_fd, frames.HELLO, self.hello())
        while True:
            fr = frames.read(0)
            if fr is None:
                self.log(ev="eof", t=time.monotonic())
                return 0
            ftype, job, blob = fr
            if ftype == frames.SHUTDOWN:
                self.log(ev="shutdown", t=time.monotonic())
                return 0
            if ftype != frames.JOB:
                self.log(ev="unexpected_frame", t=time.monotonic(), type=ftype)
                return 2
            kernels = candidate_kernels(job)
            mark = marker(kernels)
            if mark == "slow":
                time.sleep(float(self.knobs["slow_s"]))  # before "start": long-polls park meanwhile
            start = time.monotonic()
            self.log(ev="start", id=job.get("id"), t=start)  # a job killed mid-way has this line only
            frames.write(self.out_fd, frames.PROGRESS, {"id": job.get("id"), "phase": "correctness", "shape": "fake"})
            if mark == "hang":
                self.late_frames(3600)  # a kernel that never ends: the supervisor's watchdog must kill us
                return 1
            time.sleep(float(self.knobs["work_s"]))
            end = time.monotonic()
            res = result_for(job, mark, start, end, self.gpu_json())
            self.log(ev="job", id=job.get("id"), start=start, end=end, verdict=res["verdict"],
                     exiting=res.get("exiting", False), kernels=kernels,
                     launch_timeout_ms=job.get("launch_timeout_ms"), launch_factor=job.get("launch_factor"),
                     launch_floor_ms=job.get("launch_floor_ms"), has_launch_factor="launch_factor" in job,
                     has_launch_floor="launch_floor_ms" in job, deadline_ms=job.get("deadline_ms"),
                     fault_grace_ms=job.get("fault_grace_ms"),
                     blob_ok=blob_ok(job, blob), fenced="candidate_fenced" in (job.get("cubins") or {}),
                     job_keys=sorted(job))
            frames.write(self.out_fd, frames.RESULT, res)
            self.log(ev="sent", id=res.get("id"), t=time.monotonic())
            if mark in EXITS:
                _, _, code, wait = EXITS[mark]
                if wait is None:
                    self.late_frames(3600)  # the supervisor must kill us (EXIT_GRACE_MS)
                elif wait:
                    self.late_frames(float(self.knobs["exit_delay_s"]))  # a context teardown / a spinning kernel
                self.log(ev="exit", t=time.monotonic(), code=code, id=job.get("id"))
                os._exit(code)


if __name__ == "__main__":
    sys.exit(StandIn().run())
