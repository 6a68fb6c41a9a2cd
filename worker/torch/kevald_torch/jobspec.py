"""
jobspec - the run JOB, checked and bounded before anything runs (no torch):

  {"id", "kind": "run", "seed": "<hex>", "mode": "full", "deadline_ms",
   "launch_timeout_ms", "launch_factor", "launch_floor_ms",
   "timing": {"budget_ms", "target_precision", "min_trials", "max_trials", "warmup", "shapes"},
   "correctness_trials", "build_dir",
   "sources": {"candidate": {"offset", "size"}, "reference": {"offset", "size"}},
   "shapes": [{"name", "constants": {...}, "atol", "rtol"}]}

The blob holds both sources. Every quantity has a hard limit, the same as
common/limits.h's where one exists there (LIMIT_TIMING_*, the correctness
trials); a JOB past one is malformed (BadJob: the worker exits 2), as the
supervisor checked the submission first.

The launch limits are kevald-gpu's (docs/configuration.md), applied to the
candidate's forwards (judge.py says how): launch_timeout_ms, launch_factor
(absent or 0: the ceiling always) and launch_floor_ms. A JOB without
launch_timeout_ms has only its deadline.
"""
import math
import os

from .loop import BadJob, job_id

LIMIT_TIMING_BUDGET_MS_MAX = 60000
LIMIT_TIMING_TRIALS_MAX = 10000
LIMIT_CORRECTNESS_TRIALS_MAX = 16
DEADLINE_MS_MAX = 600000
SHAPES_MAX = 8                 # shape sets in one JOB
CONSTANTS_MAX = 64             # constants of one shape set
SOURCE_BYTES_MAX = 1 << 20     # each source (LIMIT_SOURCE_BYTES)
WARMUP_MAX = 100
TIMING_DEFAULT = {"budget_ms": 2000, "target_precision": 0.01, "min_trials": 6,
                  "max_trials": 1000, "warmup": 3}


class RunJob:
    """A checked run JOB (attributes as the JSON's, sources decoded)."""


def _num(obj, key, default, lo, hi, integer=False):
    v = obj.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise BadJob(f"{key} is not a{'n integer' if integer else ' number'}")
    if not math.isfinite(v) or v < lo or v > hi:
        raise BadJob(f"{key} = {v} is outside [{lo}, {hi}]")
    return v


def _source(blob, sources, side):
    s = sources.get(side) if isinstance(sources, dict) else None
    if not isinstance(s, dict):
        raise BadJob(f"sources.{side} is missing")
    off, size = s.get("offset"), s.get("size")
    if not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in (off, size)):
        raise BadJob(f"sources.{side} needs integer offset and size")
    if size > SOURCE_BYTES_MAX or off + size > len(blob):
        raise BadJob(f"sources.{side} lies outside the blob or past the limit")
    try:
        return bytes(blob[off:off + size]).decode("utf-8")
    except UnicodeDecodeError:
        raise BadJob(f"sources.{side} is not UTF-8") from None


def _constant_ok(v, depth=0):
    if isinstance(v, (bool, int, str)) or v is None:
        return not isinstance(v, str) or len(v) <= 256
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, list) and depth < 2 and len(v) <= 16:
        return all(_constant_ok(x, depth + 1) for x in v)
    return False


def parse_run(job, blob):
    """@job (a decoded JOB) and @blob as a RunJob; raises BadJob."""
    r = RunJob()
    r.id = job_id(job)
    if job.get("kind", "run") != "run":
        raise BadJob("a run worker was sent a JOB of another kind")
    seed = job.get("seed")
    if not isinstance(seed, str) or not 1 <= len(seed) <= 64:
        raise BadJob("seed is not a hex string")
    try:
        r.seed = int(seed, 16)
    except ValueError:
        raise BadJob("seed is not a hex string") from None
    r.seed_text = seed
    r.mode = job.get("mode", "full")
    if r.mode != "full":
        raise BadJob("mode is not \"full\"")
    r.deadline_ms = _num(job, "deadline_ms", 60000, 1, DEADLINE_MS_MAX)
    r.launch_timeout_ms = r.launch_factor = None
    r.launch_floor_ms = 1
    if "launch_timeout_ms" in job:
        r.launch_timeout_ms = _num(job, "launch_timeout_ms", None, 1, DEADLINE_MS_MAX, True)
        r.launch_factor = _num(job, "launch_factor", 0, 0, 1e6) or None
        r.launch_floor_ms = _num(job, "launch_floor_ms", 1, 1, DEADLINE_MS_MAX, True)
    t = job.get("timing", {})
    if not isinstance(t, dict):
        raise BadJob("timing is not an object")
    r.budget_ms = _num(t, "budget_ms", TIMING_DEFAULT["budget_ms"], 0, LIMIT_TIMING_BUDGET_MS_MAX)
    r.target_precision = _num(t, "target_precision", TIMING_DEFAULT["target_precision"], 0, 1)
    r.min_trials = _num(t, "min_trials", TIMING_DEFAULT["min_trials"], 1, LIMIT_TIMING_TRIALS_MAX, True)
    r.max_trials = _num(t, "max_trials", TIMING_DEFAULT["max_trials"], 1, LIMIT_TIMING_TRIALS_MAX, True)
    if r.max_trials < r.min_trials:
        raise BadJob("timing.max_trials < timing.min_trials")
    r.warmup = _num(t, "warmup", TIMING_DEFAULT["warmup"], 0, WARMUP_MAX, True)
    # as kevald-gpu: "first" times the first shape set only (the submission's default), "all" (or
    # absent) every one; correctness covers every shape set either way
    which = t.get("shapes", "all")
    if which not in ("first", "all"):
        raise BadJob("timing.shapes is not \"first\" or \"all\"")
    r.time_first_only = which == "first"
    r.correctness_trials = _num(job, "correctness_trials", 3, 1, LIMIT_CORRECTNESS_TRIALS_MAX, True)
    bd = job.get("build_dir")
    if not isinstance(bd, str) or not os.path.isabs(bd) or "\0" in bd:
        raise BadJob("build_dir is not an absolute path")
    r.build_dir = bd
    src = job.get("sources")
    r.candidate = _source(blob, src, "candidate")
    r.reference = _source(blob, src, "reference")
    shapes = job.get("shapes")
    if not isinstance(shapes, list) or not 1 <= len(shapes) <= SHAPES_MAX:
        raise BadJob(f"shapes is not a list of 1 to {SHAPES_MAX} shape sets")
    r.shapes = []
    for i, s in enumerate(shapes):
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
            raise BadJob(f"shapes[{i}] has no name")
        c = s.get("constants", {})
        if not isinstance(c, dict) or len(c) > CONSTANTS_MAX or \
                not all(isinstance(k, str) and k.isidentifier() and _constant_ok(v) for k, v in c.items()):
            raise BadJob(f"shapes[{i}].constants is not an object of at most {CONSTANTS_MAX} plain values")
        r.shapes.append({"name": s["name"][:128], "constants": c,
                         "atol": _num(s, "atol", 1e-4, 0, 1e6), "rtol": _num(s, "rtol", 1e-4, 0, 1e6)})
    return r
