"""
result - the run role's RESULT, shaped as kevald-gpu's (docs/internals.md,
"GPU worker"; server/dispatch/resultcheck.c checks it; schema/result.schema.json
describes what it becomes): verdict, correctness {passed, shapes[]}, timing
{speedup, shapes[]} or null, error or null, gpu, phases_ms, wall_ms,
gpu_busy_ms, gpu_active_ms, late_waits, cleanup, seed, and exiting when the
process ends after it. No torch here.

Rules kept from kevald-gpu: the first failure ends the job; a shape set's
speedup is the reference median over the candidate's, stated only when both
medians are at least MEDIAN_MIN_MS (resultcheck's floor; shorter is too
short to time and states none); timing.speedup is the geometric mean over
the timed shape sets, and 0 (none) unless every one states a speedup.
"""
import math

from . import stats

VERDICTS = ("correct", "incorrect", "runtime_error", "timeout", "rejected", "internal_error")
MEDIAN_MIN_MS = 1e-4
FIRST_MISMATCHES = 8           # LIMIT_FIRST_MISMATCHES


def value_json(x):
    """A float as the result writes it: a number, or "nan", "inf", "-inf"."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def shape_check(name):
    """A correctness.shapes[] entry before anything ran (null: not reached)."""
    return {"shape": name, "passed": False, "trials": 0, "guard_ok": None, "inputs_intact": None,
            "deterministic": None, "revalidated": None, "buffers": []}


def _finite(x):
    return None if x is None or not math.isfinite(float(x)) else float(x)


def buffer_check(name, count, mismatches=0, nan_inf=0, max_abs=None, max_rel=None, first=()):
    """A correctness.shapes[].buffers[] entry (a max that is not finite is null)."""
    return {"name": name, "max_abs": _finite(max_abs), "max_rel": _finite(max_rel),
            "mismatches": int(mismatches), "count": int(count), "nan_inf_mismatches": int(nan_inf),
            "first_mismatches": [{"index": int(i), "got": value_json(g), "want": value_json(w)}
                                 for i, g, w in list(first)[:FIRST_MISMATCHES]]}


def side_stats(samples):
    """The stats object of one side's timed durations (ms)."""
    s = stats.summarize(samples)
    return {"median_ms": s["median"], "mean_ms": s["mean"], "stdev_ms": s["stdev"], "min_ms": s["min"],
            "max_ms": s["max"], "trials": s["n"],
            "precision": None if math.isinf(s["precision"]) else s["precision"]}


def shape_timing(name, cand, ref, stop, runs_checked, clock):
    """A timing.shapes[] entry from both sides' durations (ms)."""
    c, r = side_stats(cand), side_stats(ref)
    speedup = None
    if c["median_ms"] >= MEDIAN_MIN_MS and r["median_ms"] >= MEDIAN_MIN_MS:
        speedup = r["median_ms"] / c["median_ms"]
    return {"shape": name, "candidate": c, "reference": r, "speedup": speedup, "stop": stop,
            "launches_per_trial": 1, "runs_checked": int(runs_checked), "inputs": "fresh per run",
            "roofline": {"min_ms": None, "suspicious": False}, "clock": clock}


def timing_json(shapes):
    """The timing object over timed shape sets (a list of shape_timing())."""
    sps = [s["speedup"] for s in shapes]
    speedup = stats.geomean(sps) if shapes and all(x is not None for x in sps) else 0.0
    t = {"speedup": speedup, "suspicious": False, "shapes": shapes}
    if any(s.get("clock") == "device" for s in shapes):
        t["note"] = ("the candidate ran work outside the worker's stream: those shape sets were timed "
                     "to a device-wide synchronize (both sides)")
    return t


def error(kind, message, **fields):
    """An error object: kind, message and the given members (None ones dropped)."""
    e = {"kind": kind, "message": message}
    e.update({k: v for k, v in fields.items() if v is not None})
    return e


def assemble(job_id, seed_text, verdict, shapes, timing, err, gpu, phases_ms, wall_ms,
             busy_ms=0.0, exiting=False):
    """The whole RESULT. @shapes: correctness.shapes; @timing: timing_json() or None."""
    if verdict not in VERDICTS:
        raise ValueError(f"not a GPU verdict: {verdict}")
    res = {"id": job_id, "verdict": verdict,
           "correctness": {"passed": verdict == "correct", "shapes": shapes, "fenced": False},
           "timing": timing, "resources": [], "error": err, "gpu": gpu,
           "gpu_busy_ms": max(0.0, float(busy_ms)), "gpu_active_ms": max(0.0, float(busy_ms)),
           "cleanup": {"allocations_left": 0}, "wall_ms": max(0.0, float(wall_ms)), "late_waits": 0,
           "phases_ms": {k: max(0.0, float(v)) for k, v in phases_ms.items()}, "seed": seed_text}
    if exiting:
        res["exiting"] = True
    return res


def call_timeout_result(job_id, seed_text, wall_ms, gpu, shape, phase, message, limit_ms, ref_ms=None):
    """The RESULT the watchdog sends when one call of the candidate runs past its launch
    limit (@ref_ms: the reference's time the limit came from, if it did)."""
    err = error("timeout", message, shape=shape, phase=phase, launch_limit_ms=int(limit_ms),
                reference_ms=None if ref_ms is None else float(ref_ms))
    return assemble(job_id, seed_text, "timeout", [], None, err, gpu, {}, wall_ms, exiting=True)


def timeout_result(job_id, seed_text, deadline_ms, gpu, shape=None, phase=None, shapes=()):
    """The RESULT the watchdog sends past the job's deadline (the worker then exits 4)."""
    err = error("timeout", f"the job exceeded its {deadline_ms:g} ms deadline (a kernel still running, "
                "or a forward pass that does not return)", shape=shape, phase=phase)
    return assemble(job_id, seed_text, "timeout", list(shapes), None, err, gpu, {}, deadline_ms,
                    exiting=True)
