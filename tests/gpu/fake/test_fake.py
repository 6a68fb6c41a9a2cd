#!/usr/bin/env python3
"""The real kevald-gpu against CPU test doubles of the driver and cuBLAS
(tests/gpu/fake/fakecuda.c, fakecublas.c): the whole JOB -> RESULT protocol,
every verdict path, worker survival and exit, on a host without a GPU.

Each case sends a resolved JOB (built by tests/gpu/run_suite.py's resolver
from a task of tests/gpu/tasks and a plan) whose "CUBIN" names a fake
flavor; the flavor decides how the candidate misbehaves. A case whose
flavor is a pair (plain, fenced) also sends a fenced build: the blob is
plain + fenced + reference, with cubins.candidate_fenced naming the middle.
Exit 0 when all pass, 1 otherwise.
"""
import argparse
import json
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import run_suite as rs  # noqa: E402

# Smaller shapes than on a GPU: the fake runs kernels on one CPU core.
SHRINK = {"vector_add": [{"name": "default", "N": 65536}, {"name": "odd", "N": 1000}],
          "gemm_f32": [{"name": "default", "M": 128, "N": 96, "K": 64}, {"name": "ragged", "M": 100, "N": 72, "K": 33}],
          "gemm_f16_tb": [{"name": "default", "M": 64, "N": 128, "K": 32}, {"name": "ragged", "M": 33, "N": 17, "K": 70}],
          "axpy_inout": [{"name": "default", "N": 100000}, {"name": "odd", "N": 777}]}
DUMPS = {}
TIMING = {"budget_ms": 30, "target_precision": 0.05, "min_trials": 3, "max_trials": 20, "warmup": 1}


def vplan(kernel="vadd", block=256, shared=0, nargs=4, scratch=None):
    args = ["x", "z", "y", {"type": "i32", "value": "N"}, "s"][:nargs]
    p = {"plan": [{"kernel": kernel, "grid": ["ceil_div(N, %d)" % block], "block": [block], "shared": shared,
                   "args": args}]}
    if scratch:
        p["scratch"] = scratch
    return p


def gemm_plan(kernel, z=None):
    return {"plan": [{"kernel": kernel, "grid": ["ceil_div(N, 16)", "ceil_div(M, 16)", z or 1], "block": [16, 16],
                      "shared": 0, "args": ["A", "B", "C", {"type": "i32", "value": "M"},
                                            {"type": "i32", "value": "N"}, {"type": "i32", "value": "K"}]}]}


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


# What a job the fenced build stopped reports, beyond its own fields: a runtime error of the fenced
# launch, with the context kept.
FENCED_STOP = {"verdict": "runtime_error", "error.kind": "cuda", "error.call": "fenced launch", "error.fenced": True,
               "error.sticky": False, "error.phase": "correctness", "error.trial": 0, "error.launch": 0,
               "error.kernel": "vadd", "error.side": "candidate", "correctness.fenced": True,
               "correctness.passed": False, "cleanup.allocations_left": 0}


def fenced_stop(more=None, **fields):
    return dict(FENCED_STOP, **more or {}, **{"error." + k: v for k, v in fields.items()})


# name, task, flavor (or (plain, fenced)), plan, job overrides, expect, worker ("stays"/"exits"/"serves_next":
# stays, and the same process judges a correct fenced vadd next), extra check
CASES = [
    ("correct", "vector_add", "vadd", vplan(), None, {"verdict": "correct", "correctness.passed": True,
     "correctness.shapes.0.trials": 3, "correctness.shapes.1.revalidated": True, "gpu.name": "Fake H100 (CPU test double)",
     "resources.0.kernel": "vadd", "resources.0.block": 256, "cleanup.allocations_left": 0}, "stays", "timing"),
    ("dump", "vector_add", "vadd", vplan(), {"dump": True}, {"verdict": "correct"}, "stays", "dump"),
    ("wrong", "vector_add", "vadd_wrong", vplan(), None, {"verdict": "incorrect", "error.kind": "mismatch",
     "error.buffer": "y", "error.trial": 0, "error.shape": "default", "correctness.shapes.0.guard_ok": True,
     "correctness.shapes.0.inputs_intact": True, "correctness.shapes.0.deterministic": None}, "stays", "wrong_values"),
    ("partial", "vector_add", "vadd_partial", vplan(), None, {"verdict": "incorrect", "error.kind": "mismatch",
     "error.nan_inf_mismatches": 32768, "error.mismatches": 0}, "stays", None),
    ("oob_after", "vector_add", "vadd_oob", vplan(), None, {"verdict": "incorrect", "error.kind": "guard",
     "error.buffer": "y", "error.where": "after", "error.first_offset": 0, "correctness.shapes.0.guard_ok": False}, "stays", None),
    ("oob_before", "vector_add", "vadd_under", vplan(), None, {"verdict": "incorrect", "error.kind": "guard",
     "error.buffer": "y", "error.where": "before", "error.farthest": 12}, "stays", None),
    ("mutate", "vector_add", "vadd_mutate", vplan(), None, {"verdict": "incorrect", "error.kind": "input_mutation",
     "error.buffer": "x", "error.first_index": 0, "correctness.shapes.0.inputs_intact": False}, "stays", None),
    ("first_call_only", "vector_add", "vadd_first", vplan(), None, {"verdict": "incorrect",
     "error.kind": "nondeterministic", "error.trial": 0, "correctness.shapes.0.deterministic": False}, "stays", None),
    ("race", "vector_add", "vadd_nondet", vplan(), None, {"verdict": "incorrect", "error.kind": "nondeterministic",
     "error.buffer": "y", "error.first_index": 65536 // 3}, "stays", None),
    ("lazy_while_timed", "vector_add", "vadd_lazy", vplan(), None, {"verdict": "incorrect", "error.kind": "mismatch",
     "error.phase": "revalidation", "error.nan_inf_mismatches": 65536, "correctness.shapes.0.revalidated": False,
     "correctness.shapes.0.trials": 3}, "stays", None),
    # every timed run (warm-up included) on inputs never seen before: a kernel that answers wrongly
    # whenever an input recurs after the correctness phase stays correct (with one input set for all
    # timed runs it failed at the first timed run)
    ("fresh_inputs", "vector_add", "vadd_replay", vplan(), {"timing": {"shapes": "all"}}, {"verdict": "correct",
     "timing.shapes.0.inputs": "fresh per run"}, "stays", "fresh"),
    ("block_too_large", "vector_add", "vadd", vplan(block=2048), None, {"verdict": "runtime_error",
     "error.kind": "cuda", "error.name": "CUDA_ERROR_INVALID_VALUE", "error.sticky": False, "error.launch": 0,
     "error.kernel": "vadd", "error.phase": "correctness", "cleanup.allocations_left": 0}, "stays", None),
    ("after_error", "vector_add", "vadd", vplan(), None, {"verdict": "correct"}, "stays", None),
    ("shared_optin", "vector_add", "vadd", vplan(shared=100000), None, {"verdict": "correct",
     "resources.0.shared_dynamic": 100000}, "stays", None),
    ("too_much_shared", "vector_add", "vadd", vplan(shared=1 << 20), None, {"verdict": "rejected",
     "error.kind": "plan"}, "stays", None),
    ("bad_args", "vector_add", "vadd", vplan(nargs=3), None, {"verdict": "rejected", "error.kind": "plan"}, "stays", None),
    ("missing_kernel", "vector_add", "vadd", vplan(kernel="nope"), None, {"verdict": "rejected",
     "error.kind": "plan"}, "stays", None),
    ("oom", "vector_add", "vadd", vplan(scratch=[{"name": "big", "dtype": "f32", "count": 75000000}]), None,
     {"verdict": "runtime_error", "error.name": "CUDA_ERROR_OUT_OF_MEMORY", "error.buffer": "big",
      "cleanup.allocations_left": 0}, "stays", None),
    ("after_oom", "vector_add", "vadd", vplan(), None, {"verdict": "correct"}, "stays", None),
    ("huge_scratch", "vector_add", "vadd", vplan(scratch=[{"name": "s%d" % i, "dtype": "f64", "count": 1 << 30}
                                                          for i in range(4)]), None,
     {"verdict": "internal_error", "error.kind": "internal"}, "stays", None),
    ("gemm_f32", "gemm_f32", "gemm", gemm_plan("gemm"), None, {"verdict": "correct"}, "stays", None),
    ("gemm_f16_tb", "gemm_f16_tb", "gemm", gemm_plan("gemm_tb"), None, {"verdict": "correct"}, "stays", None),
    ("gemm_bf16_batched", "gemm_bf16_batched", "gemm", gemm_plan("gemm_ta", "G"), None, {"verdict": "correct"},
     "stays", None),
    ("gemm_wrong_orientation", "gemm_f16_tb", "gemm_notrans", gemm_plan("gemm_tb"), None,
     {"verdict": "incorrect", "error.kind": "mismatch", "error.buffer": "C"}, "stays", None),
    ("axpy_inout", "axpy_inout", "axpy", json.load(open(os.path.join(HERE, "..", "cases", "axpy_correct.plan.json"))),
     None, {"verdict": "correct"}, "stays", None),
    ("oracle_uniform", "copy_uniform", "zero4", json.load(open(os.path.join(HERE, "..", "cases", "zero4.plan.json"))),
     None, {"verdict": "incorrect", "error.kind": "mismatch"}, "stays", "oracle"),
    ("oracle_int", "copy_int", "zero4", json.load(open(os.path.join(HERE, "..", "cases", "zero4.plan.json"))),
     None, {"verdict": "incorrect", "error.kind": "mismatch"}, "stays", "oracle"),
    ("time_first", "vector_add", "vadd", vplan(), {"timing": {"shapes": "first"}}, {"verdict": "correct",
     "timing.shapes.0.shape": "default", "correctness.shapes.0.revalidated": True,
     "correctness.shapes.1.revalidated": None, "correctness.shapes.1.passed": True}, "stays", "time_first"),
    ("illegal_address", "vector_add", "vadd_illegal", vplan(), None, {"verdict": "runtime_error",
     "error.name": "CUDA_ERROR_ILLEGAL_ADDRESS", "error.sticky": True, "error.launch": 0, "error.phase": "correctness",
     "error.after_limit": False, "exiting": "sticky"}, "exits", "early_fault"),
    ("spin", "vector_add", "vadd_spin", vplan(), {"launch_timeout_ms": 300}, {"verdict": "timeout",
     "error.kind": "timeout", "error.phase": "correctness", "error.launch": 0, "exiting": "timeout",
     "error.launch_limit_ms": 300}, "exits", None),
    ("after_spin", "vector_add", "vadd", vplan(), None, {"verdict": "correct", "correctness.shapes.0.launch_limit_ms": 10000},
     "stays", None),
    # the per-launch limit derived from the reference's own time: the floor, not the 60 s ceiling (factor 1,
    # so that factor x the fake reference stays below the floor even on a slow sanitized build)
    ("spin_derived", "vector_add", "vadd_spin", vplan(), {"launch_timeout_ms": 60000, "launch_factor": 1,
     "launch_floor_ms": 400}, {"verdict": "timeout", "error.kind": "timeout", "error.launch_limit_ms": 400,
     "correctness.shapes.0.launch_limit_ms": 400, "exiting": "timeout"}, "exits", "derived_limit"),
    # slow is not hung: every launch completes 150 ms after it starts, past the 100 ms limit but within the
    # fault grace: judged correct, timed, and the timing stops early as too slow
    ("slow_not_hung", "vector_add", "vadd_slow", vplan(), {"launch_factor": 1, "launch_floor_ms": 100,
     "fault_grace_ms": 1000, "timing": {"shapes": "first"}}, {"verdict": "correct", "timing.shapes.0.stop": "too_slow",
     "timing.shapes.0.launches_per_trial": 1, "correctness.shapes.0.launch_limit_ms": 100}, "stays", "slow"),
    # a fault the driver reports 300 ms late, after the 100 ms launch limit: a runtime error with its name...
    ("late_fault", "vector_add", "vadd_late_fault", vplan(), {"launch_factor": 1, "launch_floor_ms": 100,
     "fault_grace_ms": 1000}, {"verdict": "runtime_error", "error.kind": "cuda",
     "error.name": "CUDA_ERROR_ILLEGAL_ADDRESS", "error.phase": "correctness", "error.after_limit": True,
     "exiting": "sticky"}, "exits", "late_fault"),
    # ...and without the grace it would have been called a timeout
    ("late_fault_no_grace", "vector_add", "vadd_late_fault", vplan(), {"launch_factor": 1, "launch_floor_ms": 100,
     "fault_grace_ms": 0}, {"verdict": "timeout", "error.kind": "timeout", "error.fault_grace_ms": 0}, "exits", None),
    ("derived_correct", "vector_add", "vadd", vplan(), {"launch_factor": 1, "launch_floor_ms": 400},
     {"verdict": "correct", "correctness.shapes.0.launch_limit_ms": 400, "correctness.shapes.1.launch_limit_ms": 400},
     "stays", None),
    # fenced builds (worker/gpu/fenced.c): correctness runs the fenced kernels, timing the plain ones
    ("fenced_correct", "vector_add", ("vadd", "fenced_vadd"), vplan(), None, {"verdict": "correct",
     "correctness.fenced": True, "correctness.passed": True, "correctness.shapes.1.revalidated": True,
     "cleanup.allocations_left": 0}, "stays", "timing"),
    # a plain build that is wrong and a fenced one that is right: the first trial (fenced) passes, the second
    # (plain, as are the later trials and the timing) is caught
    ("fenced_timing_plain", "vector_add", ("vadd_wrong", "fenced_vadd"), vplan(), None, {"verdict": "incorrect",
     "error.kind": "mismatch", "error.phase": "correctness", "error.trial": 1, "error.shape": "default",
     "correctness.fenced": True, "correctness.shapes.0.passed": False}, "stays", None),
    # thread N stores y[N]: N = 65536 is a whole number of blocks (no thread N), N = 1000 is not
    ("fenced_oob", "vector_add", ("vadd", "fenced_vadd_oob"), vplan(), None,
     fenced_stop(name="CUDA_ERROR_ILLEGAL_ADDRESS", access="store", bytes=4, buffer="y", index=1000, offset=4000,
                 line=3, file="kernel.cu", function="vadd", thread=[[1000 % 256, 0, 0]], block=[[1000 // 256, 0, 0]],
                 shape="odd", more={"correctness.shapes.0.passed": True, "correctness.shapes.1.trials": 0}),
     "serves_next", "fenced_oob"),
    ("fenced_wild", "vector_add", ("vadd", "fenced_vadd_wild"), vplan(), None,
     fenced_stop(name="CUDA_ERROR_ILLEGAL_ADDRESS", access="load", bytes=4, address="0x10", buffer=None, index=None,
                 line=5, thread=[[0, 0, 0]], block=[[0, 0, 0]], shape="default"),
     "serves_next", "fenced_wild"),
    ("fenced_trap", "vector_add", ("vadd", "fenced_trap"), vplan(), None,
     fenced_stop(name="CUDA_ERROR_LAUNCH_FAILED", access="trap", line=7, thread=[[5, 0, 0]], block=[[1, 0, 0]],
                 shape="default"),
     "serves_next", "fenced_trap"),
    ("fenced_assert", "vector_add", ("vadd", "fenced_assert"), vplan(), None,
     fenced_stop(name="CUDA_ERROR_ASSERT", access="assert", line=9, function=None, thread=[[3, 0, 0]],
                 block=[[2, 0, 0]], shape="default"),
     "serves_next", "fenced_assert"),
    # a hang in the fenced build: its thread stops itself at the launch limit (100 ms here): a timeout without
    # the kill, the worker goes on
    ("fenced_spin", "vector_add", ("vadd", "fenced_spin"), vplan(), {"launch_factor": 1, "launch_floor_ms": 100},
     {"verdict": "timeout", "error.kind": "timeout", "error.fenced": True, "error.access": "loop", "error.line": 6,
      "error.launch_limit_ms": 100, "error.ran_ms": 100.0, "error.thread": [[0, 0, 0]], "error.phase": "correctness",
      "exiting": None}, "serves_next", "fenced_spin"),
    ("fenced_misaligned", "vector_add", ("vadd", "fenced_vadd_misaligned"), vplan(), None,
     fenced_stop(name="CUDA_ERROR_MISALIGNED_ADDRESS", access="load", bytes=4, buffer="x", offset=2, index=0, line=4,
                 thread=[[0, 0, 0]], block=[[0, 0, 0]], shape="default"),
     "serves_next", "fenced_misaligned"),
    # a "fenced build" without the fence's symbols is unusable: the plain build runs in every phase
    ("fenced_unusable", "vector_add", ("vadd", "vadd"), vplan(), None, {"verdict": "correct",
     "correctness.fenced": False, "correctness.passed": True, "cleanup.allocations_left": 0}, "stays",
     "fenced_unusable"),
]


def report(name, problems, result, worker, verbose):
    """Print one case's line (and its result and worker log when it failed). Return 1 if it failed."""
    print("%s %-24s %s" % ("ok  " if not problems else "FAIL", name, "; ".join(problems) or
                           (result or {}).get("verdict")), flush=True)
    if problems or verbose:
        print("     %s" % json.dumps(result, sort_keys=True))
        if worker is not None:
            print("\n".join("     | " + l for l in worker.log_tail(10)))
    return int(bool(problems))


def extra_check(kind, task, result, seed, worker):
    msg = ((result.get("error") or {}).get("message") or "")
    if kind == "fenced_oob":
        for want in ("CUDA_ERROR_ILLEGAL_ADDRESS: kernel 'vadd' wrote y[1000], 1 element past its end (1000 elements) "
                     "at kernel.cu line 3, thread (232,0,0) of block (3,0,0)", "the context kept (fenced build)"):
            if want not in msg:
                return "message %r lacks %r" % (msg, want)
    if kind == "fenced_wild":
        if "kernel 'vadd' read address 0x10, which is in no buffer of this job at kernel.cu line 5" not in msg:
            return "message %r" % msg
    if kind == "fenced_trap":
        if "kernel 'vadd' executed trap at kernel.cu line 7, thread (5,0,0) of block (1,0,0)" not in msg:
            return "message %r" % msg
    if kind == "fenced_assert":
        if "kernel 'vadd' failed an assertion at kernel.cu line 9, thread (3,0,0) of block (2,0,0)" not in msg:
            return "message %r" % msg
    if kind == "fenced_spin":
        if "was still running 100.0 ms after its thread (0,0,0) of block (0,0,0) started, in a loop at kernel.cu " \
           "line 6: it hangs" not in msg or "launch time limit of 100 ms" not in msg:
            return "message %r" % msg
    if kind == "fenced_misaligned":
        if "kernel 'vadd' read x at byte offset 2, misaligned for a 4-byte access at kernel.cu line 4" not in msg:
            return "message %r" % msg
    if kind == "fenced_unusable":
        if not any("fenced build is not usable (no allocation table)" in l for l in worker.log_tail(200)):
            return "the worker did not log the unusable fenced build"
    if kind == "fresh":
        for sh in result["timing"]["shapes"]:
            per = sh["launches_per_trial"]
            if sh["runs_checked"] < sh["candidate"]["trials"] * per or per < 1:
                return "runs_checked %r < trials %r x %r" % (sh["runs_checked"], sh["candidate"]["trials"], per)
    if kind == "slow":
        if not result.get("late_waits", 0) > 0:
            return "late_waits %r: the launches should have outlasted the limit" % result.get("late_waits")
        sh = result["timing"]["shapes"][0]
        # (the fake's reference takes ~0 ms here: its events land on the slow kernel's end)
        if not (sh["speedup"] or 0) < 0.1 or sh["candidate"]["trials"] != 3:
            return "too_slow timing: %r" % sh
    if kind in ("early_fault", "late_fault"):
        # how long the wait took until the fault surfaced: the fake reports the late one 300 ms after its launch,
        # measured from just after it
        ms = (result.get("error") or {}).get("surfaced_ms")
        lo, hi = (290, 1100) if kind == "late_fault" else (0, 100)
        if not (isinstance(ms, (int, float)) and lo <= ms < hi):
            return "error.surfaced_ms %r, expected in [%d, %d)" % (ms, lo, hi)
    if kind == "time_first":
        if len((result.get("timing") or {}).get("shapes") or []) != 1:
            return "timing.shapes: %r (want the first shape set only)" % (result.get("timing") or {}).get("shapes")
    if kind == "derived_limit":
        e = result.get("error") or {}
        if "the reference's" not in e.get("message", "") or not (e.get("reference_ms", -1) >= 0):
            return "derived-limit message: %r" % e
        if not result.get("wall_ms", 1e9) < 5000:
            return "the derived limit did not cut the wait short: wall_ms %r" % result.get("wall_ms")
    if kind == "timing":
        t = result.get("timing") or {}
        s = t.get("shapes") or []
        if len(s) != 2 or not (t.get("speedup") or 0) > 0:
            return "timing: %r" % t
        for sh in s:
            for side in ("candidate", "reference"):
                st = sh[side]
                if not (st["trials"] >= 3 and st["min_ms"] <= st["median_ms"] <= st["max_ms"]):
                    return "timing stats %r" % st
        if not result.get("gpu_busy_ms", 0) > 0 or not result.get("wall_ms", 0) >= result["gpu_busy_ms"]:
            return "busy %r wall %r" % (result.get("gpu_busy_ms"), result.get("wall_ms"))
    if kind == "wrong_values":
        ts = rs.trial_seed(int(seed, 16), 0, 0)
        xi = rs.resolve_init(task["buffers"][0]["init"], {})
        zi = rs.resolve_init(task["buffers"][1]["init"], {})
        fm = result["correctness"]["shapes"][0]["buffers"][0]["first_mismatches"]
        if [m["index"] for m in fm] != list(range(8)):
            return "first_mismatches indices %r" % [m["index"] for m in fm]
        for m in fm:
            x = rs.model_value(xi, "f32", ts, 0, m["index"])
            z = rs.model_value(zi, "f32", ts, 1, m["index"])
            if abs(m["want"] - f32(x + z)) > 1e-6 or abs(m["got"] - f32(x - z)) > 1e-6:
                return "element %d: got %r want %r, model x=%r z=%r" % (m["index"], m["got"], m["want"], x, z)
    if kind == "dump":
        d = DUMPS
        keys = sorted(d)
        want = sorted((sh["name"], b, w) for sh in task["shapes"] for b, w in (("x", "input"), ("z", "input"),
                                                                               ("y", "output")))
        if keys != want:
            return "dumped %r, expected %r" % (keys, want)
        ts = rs.trial_seed(int(seed, 16), 0, 0)
        n = task["shapes"][0]["N"]
        x = struct.unpack("<%df" % n, bytes(d[("default", "x", "input")]))
        z = struct.unpack("<%df" % n, bytes(d[("default", "z", "input")]))
        y = struct.unpack("<%df" % n, bytes(d[("default", "y", "output")]))
        xi = rs.resolve_init(task["buffers"][0]["init"], {})
        for i in (0, 1, n // 2, n - 1):
            if x[i] != rs.model_value(xi, "f32", ts, 0, i) or y[i] != f32(x[i] + z[i]):
                return "dump element %d: x %r (model %r), y %r, z %r" % (i, x[i], rs.model_value(xi, "f32", ts, 0, i), y[i], z[i])
    if kind == "oracle":
        return rs.oracle_check(task, result)
    return None


class MemLog:
    """The fake's FAKECUDA_LOG: cuMemAlloc/cuMemFree calls since the last look."""

    def __init__(self, path):
        self.path, self.pos = path, 0

    def since(self):
        with open(self.path) as f:
            f.seek(self.pos)
            lines = f.read().splitlines()
            self.pos = f.tell()
        allocs = [l for l in lines if l.startswith("alloc ")]
        frees = [l for l in lines if l.startswith("free ")]
        used = int(lines[-1].split()[2]) if lines else None
        return len(allocs), len(frees), used


def fake_job(task, plan, job_id, seed, flavor, overrides):
    """The JOB and its blob: the candidate (plain + fenced when @flavor is a pair), then the reference."""
    plain, fenced = flavor if isinstance(flavor, tuple) else (flavor, None)
    cand = ("FAKE:%s\n" % plain).encode() + b"\0"
    fen = ("FAKE:%s\n" % fenced).encode() + b"\0" if fenced else b""
    ref = b"FAKE:ref\n\0" if task["reference"].get("source_file") else b""
    job = rs.resolve_job(task, plan, job_id, seed, len(cand), len(ref), overrides)
    if fen:
        job["cubins"]["candidate_fenced"] = {"offset": len(cand), "size": len(fen)}
        if ref:
            job["cubins"]["reference"]["offset"] = len(cand) + len(fen)
    return job, cand + fen + ref


def serves_next(worker, pid, n, seed):
    """After a fenced stop: the process that judged it (pid @pid, still running) judges a correct job, fenced
    again, and keeps running. Return a problem or None."""
    task = json.load(open(os.path.join(HERE, "..", "tasks", "vector_add.json")))
    task["shapes"] = SHRINK["vector_add"]
    job, blob = fake_job(task, vplan(), 500 + n, seed, ("vadd", "fenced_vadd"), {"timing": TIMING})
    if worker.p.pid != pid or worker.p.poll() is not None:
        return "the worker (pid %r) is gone before the next job" % pid
    result, _ = worker.run(job, blob, 60)
    if not worker.alive_after(0.2):
        return "the worker (pid %r) exited after the next job (status %r)" % (pid, worker.p.returncode)
    p = rs.check_expect({"verdict": "correct", "correctness.fenced": True, "cleanup.allocations_left": 0}, result)
    return "next job: " + "; ".join(p) if p else None


def one_job(worker, n, taskname, shapes, flavor, plan):
    task = json.load(open(os.path.join(HERE, "..", "tasks", taskname + ".json")))
    task["shapes"] = shapes
    job, blob = fake_job(task, plan, n, "00c0ffee12345678", flavor, {"timing": TIMING})
    result, _ = worker.run(job, blob, 60)
    return result


# The device-memory slab and pool (worker/gpu/devmem.c), each group on a worker
# of its own with KEVALD_DEVMEM_POOL_BYTES, the worker's memory budget (None:
# the default, 1/16 of the fake's 512 MiB; a quarter of the budget is the
# slab, allocated at start-up, the rest bounds the pool): name, N, scratch
# elements (a candidate scratch buffer "s", the kernel's fifth argument),
# flavor, expect, check(allocs, frees, bytes the worker holds beyond
# start-up, the timed shape set's phases_ms.alloc: ms in cuMemAlloc). A
# vector_add job of one shape set with 3 correctness trials has 9 distinct
# buffers (3 candidate x 2 sets of 384 KiB with guards, 3 reference of 256
# KiB at N = 65536) and, with neither slab nor pool, makes 33 cuMemAlloc
# calls (9 a trial, 6 for timing).
V = {"verdict": "correct", "cleanup.allocations_left": 0}
MIB = 1 << 20
POOL_GROUPS = [
    (None, [  # 8 MiB of slab: every buffer fits, no driver call at all
        ("slab_first", 65536, None, "vadd", V, lambda a, f, u, al: a == 0 and f == 0 and u == 0 and al == 0),
        ("slab_again", 65536, None, "vadd", V, lambda a, f, u, al: a == 0 and f == 0 and u == 0 and al == 0),
        # leaks: each marker job's buffers go back to the slab, reused by the next jobs;
        # vadd_snoop aborts the worker if it finds the marker anywhere in device memory
        ("leak_mark", 5000, None, "vadd_mark", {"verdict": "incorrect", "error.kind": "mismatch",
                                                "cleanup.allocations_left": 0}, lambda a, f, u, al: a == 0 and f == 0),
        ("leak_mark_scratch", 6000, 1000, "vadd_mark_scratch", V, lambda a, f, u, al: a == 0 and f == 0),
        # a stray write past a guard band, into the granule slack after the buffer (zeroed with it)
        ("leak_mark_stray", 5000, None, "vadd_mark_stray", V, lambda a, f, u, al: a == 0 and f == 0),
        ("leak_snoop", 7000, None, "vadd_snoop", V, lambda a, f, u, al: a == 0),
    ]),
    (4 * MIB, [  # a 1 MiB slab: what does not fit comes from the driver, then from the pool
        ("slab_overflow", 65536, None, "vadd", V, lambda a, f, u, al: 0 < a < 9 and f == 0),
        ("slab_overflow_again", 65536, None, "vadd", V, lambda a, f, u, al: a == 0 and f == 0 and al == 0),
    ]),
    (1 * MIB, [  # bounded: a 256 KiB slab, a 768 KiB pool; the least recently freed go back
        ("pool_bounded", 65536, None, "vadd", V, lambda a, f, u, al: f > 0 and 0 < u <= 768 << 10),
    ]),
    (0, [  # neither slab nor pool: every free is a cuMemFree
        ("pool_off", 65536, None, "vadd", V, lambda a, f, u, al: a == 33 and f == 33 and u == 0 and al > 0),
    ]),
    (400 * MIB, [  # a 100 MiB slab; out of memory with a full pool: released, then the allocation retried
        ("oom_fill", 65536, 100 * MIB // 4, "vadd", V, lambda a, f, u, al: f == 0 and u >= 200 * MIB),
        ("oom_retry", 65536, 130 * MIB // 4, "vadd", V, lambda a, f, u, al: f >= 2 and u >= 260 * MIB),
    ]),
    (2400 * MIB, [  # no room for a 600 MiB slab on the fake's 512 MiB: the pool alone
        ("slab_none", 65536, None, "vadd", V, lambda a, f, u, al: 0 < a <= 9 and f == 0 and u > 0),
        ("slab_none_again", 65536, None, "vadd", V, lambda a, f, u, al: a == 0 and f == 0 and al == 0),
    ]),
]


def pool_cases(args, logdir):
    failed, total = 0, 0
    for gi, (limit, cases) in enumerate(POOL_GROUPS):
        path = os.path.join(logdir, "mem-%d.log" % gi)
        os.environ["FAKECUDA_LOG"] = path
        if limit is None:
            os.environ.pop("KEVALD_DEVMEM_POOL_BYTES", None)
        else:
            os.environ["KEVALD_DEVMEM_POOL_BYTES"] = str(limit)
        worker = None
        try:
            worker = rs.Worker(args.gpu_bin, ["--no-sandbox"], args.verbose)
            log = MemLog(path)
            _, _, base = log.since()
            # the worker asks for one hardware queue before cuInit (worker/gpu/gpu.c)
            with open(path) as f:
                if "init_max_connections 1 " not in f.read():
                    raise RuntimeError("cuInit ran without CUDA_DEVICE_MAX_CONNECTIONS=1")
        except Exception as e:  # noqa: BLE001
            print("FAIL pool group %d: %s: %s" % (gi, type(e).__name__, e))
            failed += len(cases)
            total += len(cases)
            continue
        for n, (name, size, scratch, flavor, expect, check) in enumerate(cases):
            problems, result = [], None
            total += 1
            try:
                plan = vplan(scratch=[{"name": "s", "dtype": "f32", "count": scratch}] if scratch else None,
                             nargs=5 if flavor == "vadd_mark_scratch" else 4)
                result = one_job(worker, 1000 + 10 * gi + n, "vector_add", [{"name": "default", "N": size}],
                                 flavor, plan)
                problems += rs.check_expect(expect, result)
                allocs, frees, used = log.since()
                held = (used if used is not None else base) - base
                alloc_ms = rs.lookup(result, "timing.shapes.0.phases_ms.alloc")
                if not check(allocs, frees, held, alloc_ms):
                    problems.append("memory: %d cuMemAlloc, %d cuMemFree, %d bytes held beyond start-up, "
                                    "timing phases_ms.alloc %r" % (allocs, frees, held, alloc_ms))
                elif args.verbose:
                    print("     %d cuMemAlloc, %d cuMemFree, %d bytes held, timing alloc %r ms" % (allocs, frees, held, alloc_ms))
                if not worker.alive_after(0.2):
                    problems.append("the worker exited (status %r)" % worker.p.returncode)
            except Exception as e:  # noqa: BLE001
                problems.append("%s: %s" % (type(e).__name__, e))
            failed += report(name, problems, result, worker, args.verbose)
        worker.stop()
        if worker.p.returncode not in (0, None):
            print("FAIL pool group %d: worker exit status %r" % (gi, worker.p.returncode))
            failed += 1
    os.environ.pop("FAKECUDA_LOG", None)
    os.environ.pop("KEVALD_DEVMEM_POOL_BYTES", None)
    return failed, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu-bin", required=True)
    ap.add_argument("--fake-libs", required=True)
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    os.environ["LD_LIBRARY_PATH"] = args.fake_libs
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)  # the worker's own default is checked
    seed = "00c0ffee12345678"
    worker, failed = None, 0
    for n, (name, taskname, flavor, plan, over, expect, life, check) in enumerate(CASES):
        task = json.load(open(os.path.join(HERE, "..", "tasks", taskname + ".json")))
        task["shapes"] = SHRINK.get(taskname, task["shapes"])
        job, blob = fake_job(task, plan, n + 1, seed, flavor,
                             dict(over or {}, timing=dict(TIMING, **(over or {}).get("timing", {}))))
        problems = []
        result = None
        try:
            if worker is None or worker.p.poll() is not None:
                worker = rs.Worker(args.gpu_bin, ["--no-sandbox"], args.verbose)
                if not worker.hello.get("ok"):
                    print("HELLO not ok: %s" % json.dumps(worker.hello))
                    print("\n".join(worker.log_tail(30)))
                    return 1
            pid = worker.p.pid
            result, _ = worker.run(job, blob, 60)
            global DUMPS
            DUMPS = worker.dumps
            problems += rs.check_expect(expect, result)
            if check:
                c = extra_check(check, task, result, seed, worker)
                if c:
                    problems.append(c)
            if life == "exits":
                if worker.alive_after(10):
                    problems.append("the worker did not exit")
                    worker.p.kill()
                elif worker.p.returncode not in (3, 4):
                    problems.append("exit status %r" % worker.p.returncode)
            elif not worker.alive_after(0.2):
                problems.append("the worker exited (status %r)" % worker.p.returncode)
            elif life == "serves_next":
                c = serves_next(worker, pid, n, seed)
                if c:
                    problems.append(c)
        except Exception as e:  # noqa: BLE001
            problems.append("%s: %s" % (type(e).__name__, e))
        failed += report(name, problems, result, worker, args.verbose)
    if worker is not None:
        worker.stop()
        if worker.p.returncode not in (0, None):
            print("FAIL shutdown: worker exit status %r" % worker.p.returncode)
            failed += 1
    with tempfile.TemporaryDirectory(prefix="kevald-fake-") as logdir:
        pf, pt = pool_cases(args, logdir)
    failed += pf
    print("gpu-worker-fake: %d of %d cases passed" % (len(CASES) + pt - failed, len(CASES) + pt))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
