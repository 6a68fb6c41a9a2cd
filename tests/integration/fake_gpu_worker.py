#!/usr/bin/env python3
"""
A fake kevald-gpu for the dispatcher's scheduling tests (no GPU needed).

It speaks the real child protocol (common/frame.h: a 16-byte header "KVF1",
type, JSON length, blob length, little-endian u32 each; then the JSON and the
blob) on fds 0 and 1: HELLO as worker/gpu/gpu_main.c sends it, then one RESULT
per JOB until end of input or SHUTDOWN.

The supervisor scrubs the environment of its children, so everything the test
controls lives next to this file's path as it was executed (the libexec
folder the test makes, where this script is copied as `kevald-gpu`):

  fake_gpu.log   one JSON object per line, appended (O_APPEND, one write):
                 {"ev": "hello", "pid", "gpu", "t"}
                 {"ev": "job", "pid", "gpu", "id", "start", "end", "verdict",
                  "exiting", "kernels", "launch_timeout_ms", "launch_factor",
                  "launch_floor_ms", "has_launch_factor", "has_launch_floor",
                  "fault_grace_ms", "blob_ok", "fenced", "job_keys"}
                 (and {"ev": "start", "pid", "gpu", "id", "t"} on receipt: a
                 worker killed mid-job leaves only that line)
                 {"ev": "late_frame", "pid", "gpu", "t", "type", "id"}  (a frame
                 received after an exiting RESULT, while waiting to exit)
                 {"ev": "exit", "pid", "gpu", "t", "code"}   (just before _exit)
                 {"ev": "eof"|"shutdown", "pid", "gpu", "t"}
                 times are time.monotonic() (CLOCK_MONOTONIC: one clock for
                 every process of the machine).
  fake_gpu.json  optional knobs: {"work_s": 0.05, "exit_delay_s": 0.3}

The verdict comes from the candidate's kernel name (the only part of the
source a JOB carries besides the CUBIN): a name containing
`FAKEV_<marker>` picks
  correct (default)     "correct", with timing.speedup 1.0 (one shape set, medians 1 ms)
  exiting_false         "correct" with an explicit "exiting": false (and no exit)
  timed                 "correct" with the JOB's first shape set timed: candidate
                        median 0.5 ms, reference 1.0 ms (speedup 2.0), roofline
                        min_ms 0.1
  suspicious            "correct" with timing.speedup 40.0 faster than the roofline
                        allows: timing.suspicious true, a note, and shape
                        "default" with roofline.suspicious true (as worker/gpu/judge.c)
  incorrect             "incorrect"
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
The GPU index is CUDA_VISIBLE_DEVICES (the supervisor pins each worker to
one device that way); the RESULT's "gpu" says which fake process ran the job.
"""
import json
import os
import select
import struct
import sys
import time

MAGIC = 0x3146564B  # "KVF1"
HELLO, JOB, RESULT, PROGRESS, SHUTDOWN = 1, 2, 3, 4, 5
HERE = os.path.dirname(os.path.abspath(sys.argv[0]))
LOG = os.path.join(HERE, "fake_gpu.log")
PID = os.getpid()
GPU = int(os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("KEVALD_GPU_INDEX") or 0)


def knobs():
    try:
        with open(os.path.join(HERE, "fake_gpu.json")) as f:
            k = json.load(f)
    except FileNotFoundError:
        k = {}
    return {"work_s": float(k.get("work_s", 0.05)), "exit_delay_s": float(k.get("exit_delay_s", 0.3))}


def log(**ev):
    ev.setdefault("pid", PID)
    ev.setdefault("gpu", GPU)
    line = (json.dumps(ev, sort_keys=True) + "\n").encode()
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_exact(fd, n):
    """n bytes from fd, or None at a clean end of input before any byte."""
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            if not buf:
                return None
            raise EOFError(f"truncated frame ({len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def read_frame(fd):
    h = read_exact(fd, 16)
    if h is None:
        return None
    magic, ftype, jlen, blen = struct.unpack("<4I", h)
    if magic != MAGIC:
        raise ValueError(f"bad magic {magic:#x}")
    js = read_exact(fd, jlen) if jlen else b""
    blob = read_exact(fd, blen) if blen else b""
    return ftype, json.loads(js), blob


def write_frame(fd, ftype, obj, blob=b""):
    js = json.dumps(obj).encode()
    data = struct.pack("<4I", MAGIC, ftype, len(js), len(blob)) + js + blob
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def hello():
    return {
        "role": "gpu", "pid": PID, "ok": True, "device": 0, "name": "Fake GPU (kevald tests)",
        "cc": "9.0", "arch": "sm_90a", "driver": "fake", "cuda_driver": 13000, "sms": 132,
        "memory_bytes": 85 << 30, "l2_bytes": 50 << 20, "max_shared_optin": 232448,
        "max_threads_per_block": 1024, "max_threads_per_sm": 2048, "cublas": "fake",
        "layers": {"sandbox": {"active": False, "detail": "fake GPU worker (tests/integration)"}},
        "worker": {"printf_fifo_bytes": 1 << 20, "l2_flush_bytes": 100 << 20, "guard_bytes": 65536},
    }


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


def result_for(job, mark, t0, t1):
    base = {"id": job.get("id"), "seed": job.get("seed"), "gpu_busy_ms": (t1 - t0) * 1000,
            "wall_ms": (t1 - t0) * 1000, "cleanup": {"allocations_left": 0},
            # "index" 0 like kevald-gpu: under CUDA_VISIBLE_DEVICES its GPU is device 0
            "gpu": {"name": "Fake GPU (kevald tests)", "index": 0, "fake_pid": PID},
            "resources": None}
    if mark in ("correct", "exiting_false"):
        if mark == "exiting_false":
            base["exiting"] = False  # said explicitly: this process goes on
        base.update(verdict="correct", correctness={"passed": True, "shapes": [{"shape": "default", "passed": True}]},
                    timing={"speedup": 1.0, "shapes": [
                        {"shape": "default", "speedup": 1.0, "stop": "precision",
                         "candidate": {"median_ms": 1.0, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10},
                         "roofline": {"min_ms": None, "suspicious": False}}]})
    elif mark == "timed":
        shape = ((job.get("shapes") or [{}])[0]).get("name", "default")
        base.update(verdict="correct", correctness={"passed": True, "shapes": [{"shape": shape, "passed": True}]},
                    timing={"speedup": 2.0, "shapes": [{"shape": shape, "speedup": 2.0, "stop": "precision",
                                                         "candidate": {"median_ms": 0.5, "trials": 10},
                                                         "reference": {"median_ms": 1.0, "trials": 10},
                                                         "roofline": {"min_ms": 0.1, "suspicious": False}}]})
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
        base.update(id=(job.get("id") or 0) + 1000000, verdict="correct",
                    correctness={"passed": True, "shapes": [{"shape": "default", "passed": True}]},
                    timing={"speedup": 1.0, "shapes": [
                        {"shape": "default", "speedup": 1.0, "stop": "precision",
                         "candidate": {"median_ms": 1.0, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10},
                         "roofline": {"min_ms": None, "suspicious": False}}]})
    elif mark == "forged_speedup":  # a reward its own medians do not back (1 ms against 1 ms)
        base.update(verdict="correct", correctness={"passed": True, "shapes": [{"shape": "default", "passed": True}]},
                    timing={"speedup": 1e308, "shapes": [
                        {"shape": "default", "speedup": 1e308, "stop": "precision",
                         "candidate": {"median_ms": 1.0, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10},
                         "roofline": {"min_ms": None, "suspicious": False}}]})
    elif mark == "forged_roofline":  # medians that agree, but 100x under the roofline bound and not flagged
        base.update(verdict="correct", correctness={"passed": True, "shapes": [{"shape": "default", "passed": True}]},
                    timing={"speedup": 1000.0, "suspicious": False, "shapes": [
                        {"shape": "default", "speedup": 1000.0, "stop": "precision",
                         "candidate": {"median_ms": 0.001, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10},
                         "roofline": {"min_ms": 0.1, "suspicious": False}}]})
    elif mark == "forged_correct":  # "correct" whose correctness is not a passed check
        base.update(verdict="correct", correctness=7,
                    timing={"speedup": 1.0, "shapes": [
                        {"shape": "default", "speedup": 1.0, "stop": "precision",
                         "candidate": {"median_ms": 1.0, "trials": 10}, "reference": {"median_ms": 1.0, "trials": 10}}]})
    else:
        base.update(verdict="internal_error", error={"kind": "internal", "message": f"fake: unknown marker {mark!r}"})
    return base


def late_frames(seconds):
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
            fr = read_frame(0)
        except (EOFError, ValueError):
            fr = None
        if fr is None:
            time.sleep(max(0.0, deadline - time.monotonic()))
            return
        job = fr[1] if isinstance(fr[1], dict) else {}
        log(ev="late_frame", t=time.monotonic(), type=fr[0], id=job.get("id"))


def main():
    out_fd = os.dup(1)  # frames on a private descriptor, as the real worker does
    k = knobs()
    log(ev="hello", t=time.monotonic(), argv=sys.argv[1:])
    write_frame(out_fd, HELLO, hello())
    while True:
        fr = read_frame(0)
        if fr is None:
            log(ev="eof", t=time.monotonic())
            return 0
        ftype, job, blob = fr
        if ftype == SHUTDOWN:
            log(ev="shutdown", t=time.monotonic())
            return 0
        if ftype != JOB:
            log(ev="unexpected_frame", t=time.monotonic(), type=ftype)
            return 2
        start = time.monotonic()
        kernels = candidate_kernels(job)
        mark = marker(kernels)
        log(ev="start", id=job.get("id"), t=start)  # a job killed mid-way has this line only
        write_frame(out_fd, PROGRESS, {"id": job.get("id"), "phase": "correctness", "shape": "fake"})
        if mark == "hang":
            late_frames(3600)  # a kernel that never ends: the supervisor's watchdog must kill us
            return 1
        time.sleep(k["work_s"])
        end = time.monotonic()
        res = result_for(job, mark, start, end)
        log(ev="job", id=job.get("id"), start=start, end=end, verdict=res["verdict"],
            exiting=res.get("exiting", False), kernels=kernels,
            launch_timeout_ms=job.get("launch_timeout_ms"), launch_factor=job.get("launch_factor"),
            launch_floor_ms=job.get("launch_floor_ms"), has_launch_factor="launch_factor" in job,
            has_launch_floor="launch_floor_ms" in job, deadline_ms=job.get("deadline_ms"),
            fault_grace_ms=job.get("fault_grace_ms"),
            blob_ok=blob_ok(job, blob), fenced="candidate_fenced" in (job.get("cubins") or {}),
            job_keys=sorted(job))
        write_frame(out_fd, RESULT, res)
        if mark in EXITS:
            _, _, code, wait = EXITS[mark]
            if wait is None:
                late_frames(3600)  # the supervisor must kill us (EXIT_GRACE_MS)
            elif wait:
                late_frames(k["exit_delay_s"])  # a context teardown / a spinning kernel
            log(ev="exit", t=time.monotonic(), code=code, id=job.get("id"))
            os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
