"""protocol - the pure parts of the baseline tool (no torch, no GPU; tested by
test_protocol.py on any machine).

kevald's timing protocol, as worker/gpu/timing.c and worker/gpu/judge_timing.c implement it
(docs/internals.md, "Timed runs on fresh inputs"), restated for PyTorch:
  * every timed execution runs on inputs generated for it alone, before the
    L2 flush (a read of twice the L2), so each starts with its inputs out of
    the L2;
  * a trial is one event pair around L executions, each on its own input
    set, L chosen after the warm-up so that a trial lasts about 1 ms (at
    most 32, at most 25 ms, at most 1 GiB of input sets); the sample is the
    trial's time / L;
  * the statistic is the median; the loop stops at max_trials, or when at
    least min_trials samples give a 95 % interval of the median within the
    target precision, or when the budget is spent (after at least 3);
and the baseline file's format (common/baselines.c reads it), the GPU slug
(the same function as baselines_slug()), task selection and the time budget.
"""
import datetime
import fnmatch
import math
import os
import re
import sys

FORMAT = 1
# worker/gpu/judge_timing.c and worker/gpu/timing.h
TRIAL_TARGET_MS = 1.0
TRIAL_MAX_MS = 25.0
SETS_MAX = 32
SETS_BYTES = 1 << 30
# the defaults of a submission's timing (docs/internals.md, Submission format)
POLICY = {"budget_ms": 2000.0, "target_precision": 0.01, "min_trials": 6, "max_trials": 1000, "warmup": 3}


def slug(gpu_name):
    """baselines_slug(): ASCII letters lower-cased, digits kept, every run of
    anything else one '-', none at either end ("NVIDIA H100 80GB HBM3" ->
    "nvidia-h100-80gb-hbm3")."""
    return "-".join(w for w in re.split(r"[^a-z0-9]+", (gpu_name or "").lower()) if w)


def ci_ranks(n):
    """0-based indices of the sorted sample that bound the median's 95 % interval (timing_ci_ranks())."""
    half = 1.96 * math.sqrt(n) / 2.0
    lo = max(1.0, math.floor(n / 2.0 - half))
    hi = min(float(n), math.ceil(n / 2.0 + half + 1.0))
    return int(lo) - 1, int(hi) - 1


def stats(samples):
    """Summary of @samples (ms) as timing_stats_compute(): median, mean, stdev,
    min, max, trials and precision (half the median's 95 % interval over the
    median; infinite below 3 samples)."""
    v = sorted(samples)
    n = len(v)
    if n == 0:
        raise ValueError("no samples")
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
    mean = sum(v) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    lo, hi = ci_ranks(n)
    precision = math.inf if n < 3 or median <= 0 else (v[hi] - v[lo]) / 2.0 / median
    return {"median_ms": median, "mean_ms": mean, "stdev_ms": stdev, "min_ms": v[0], "max_ms": v[-1],
            "trials": n, "precision": precision}


def should_stop(policy, trials, elapsed_ms, precision):
    """The stopping rule of timing_should_stop() for one side: "max_trials",
    "precision", "budget" or None (go on)."""
    if trials >= policy["max_trials"]:
        return "max_trials"
    if trials >= policy["min_trials"] and precision <= policy["target_precision"]:
        return "precision"
    if elapsed_ms >= policy["budget_ms"] and trials >= 3:
        return "budget"
    return None


def launches_per_trial(ms, set_bytes, target_precision=0.01):
    """L as choose_per(): about a 1 ms trial (less at a coarser target), at most
    SETS_MAX, at most TRIAL_MAX_MS a trial and SETS_BYTES of input sets."""
    if not ms > 0:
        return 1
    target = min(TRIAL_TARGET_MS, TRIAL_TARGET_MS * 0.01 / target_precision)
    per = int(min(math.floor(target / ms), SETS_MAX))
    while per > 1 and (per * ms > TRIAL_MAX_MS or per * set_bytes > SETS_BYTES):
        per -= 1
    return max(per, 1)


def select_tasks(names, patterns):
    """The task names matching any of the comma-separated shell globs (all when none), sorted."""
    pats = [p.strip() for p in (patterns or "").split(",") if p.strip()]
    return sorted(n for n in names if not pats or any(fnmatch.fnmatchcase(n, p) for p in pats))


class Budget:
    """A wall-time budget for the whole run; fits() says whether a step
    estimated at @est_s seconds may still start. @clock returns seconds."""

    def __init__(self, budget_s, clock):
        self.clock = clock
        self.start = clock()
        self.budget_s = budget_s

    def left(self):
        return math.inf if self.budget_s is None else self.budget_s - (self.clock() - self.start)

    def fits(self, est_s):
        return self.left() >= est_s


def new_doc(gpu, versions, policy, date=None):
    """An empty baseline file: format, GPU name and slug, date (UTC, ISO 8601),
    @versions (torch, cuda, driver, triton, python: strings or None), the
    protocol, and no tasks."""
    doc = {"format": FORMAT, "gpu": gpu, "slug": slug(gpu),
           "date": date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    for k in ("torch", "cuda", "driver", "triton", "python"):
        doc[k] = versions.get(k)
    doc["protocol"] = dict(policy, statistic="median", inputs="fresh per run", l2_flush="read 2x L2",
                           trial_target_ms=TRIAL_TARGET_MS, launches_per_trial_max=SETS_MAX, tf32=False)
    doc["tasks"] = {}
    return doc


def set_result(doc, task, shape, params, mode, ms=None, error=None, detail=None):
    """Record one measurement: @mode "eager" or "compile"; @ms the median (None
    when it failed or was not run, then @error says why); @detail the stats."""
    if mode not in ("eager", "compile"):
        raise ValueError(mode)
    if ms is None and not error:
        raise ValueError("a missing figure needs a reason")
    shapes = doc["tasks"].setdefault(task, {})
    e = shapes.get(shape)
    if not e or e.get("params") != params:   # new, or measured at other params: start afresh
        e = shapes[shape] = {"params": dict(params), "eager_ms": None, "eager_error": "not run",
                             "compile_ms": None, "compile_error": "not run"}
    e[mode + "_ms"] = ms if ms is not None and math.isfinite(ms) and ms > 0 else None
    e.pop(mode + "_error", None)
    e.pop(mode, None)
    if e[mode + "_ms"] is None:
        e[mode + "_error"] = error or "not a positive time: %r" % (ms,)
    elif detail:   # plain JSON for common/baselines.c: an infinite precision (< 3 samples) is null
        e[mode] = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                   for k, v in detail.items() if k != "median_ms"}


def measured(doc, task, shape, mode, params):
    """Whether @doc already holds a figure for this entry at these params (a resumed run skips it)."""
    e = doc.get("tasks", {}).get(task, {}).get(shape)
    return bool(e) and e.get("params") == params and e.get(mode + "_ms") is not None


def resume(old, gpu):
    """The entries of an earlier file @old worth keeping for @gpu (same slug), or {} when none."""
    if not old or old.get("format") != FORMAT or slug(old.get("gpu")) != slug(gpu):
        return {}
    return old.get("tasks", {})


def summary(doc):
    """Counts for the run's last line: entries, eager and compile figures, and failures."""
    n = e = c = 0
    for shapes in doc["tasks"].values():
        for ent in shapes.values():
            n += 1
            e += ent.get("eager_ms") is not None
            c += ent.get("compile_ms") is not None
    return {"entries": n, "eager": e, "compile": c}


# which files of a library are tasks: common/tasklib.c's rule, once for the Python tools
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tasks"))
from taskfiles import NOT_TASK_DIRS, is_task_file  # noqa: E402,F401
