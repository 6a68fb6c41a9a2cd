"""
stats - the timing loop's statistics and stopping rule, as worker/gpu/timing.c
computes them for kevald-gpu (the same ranks, the same rule, so that both
workers' timings mean the same):

  * the median's 95% confidence interval lies between the order statistics of
    ranks n/2 - 1.96*sqrt(n)/2 and n/2 + 1.96*sqrt(n)/2 + 1 (1-based, rounded
    outwards, clamped to [1, n]); the precision is its half-width over the
    median (+inf below 3 samples);
  * stop at max_trials; at "too_slow" once 3 pairs show the candidate over 10x
    slower than the reference; at "precision" once min_trials are in and both
    medians are known to target_precision; at "budget" once the budget is
    spent (and 3 trials are in).

Also the choice between the two clocks of a timed run (pick_clock()).
"""
import math

TOO_SLOW_SPEEDUP = 0.1
TOO_SLOW_TRIALS = 3


def ci_ranks(n):
    """0-based indices (lo, hi) of the median's confidence interval of n samples."""
    half = 1.96 * math.sqrt(n) / 2.0
    lo = math.floor(n / 2.0 - half)
    hi = math.ceil(n / 2.0 + half + 1.0)
    lo = max(lo, 1)
    hi = min(hi, n)
    return int(lo) - 1, int(hi) - 1


def summarize(samples):
    """A dict of n, median, mean, stdev, min, max, ci_low, ci_high, precision of
    a non-empty list of durations."""
    if not samples:
        raise ValueError("no samples")
    v = sorted(samples)
    n = len(v)
    median = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0
    mean = sum(v) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    lo, hi = ci_ranks(n)
    precision = math.inf if n < 3 or median <= 0 else (v[hi] - v[lo]) / 2.0 / median
    return {"n": n, "median": median, "mean": mean, "stdev": stdev, "min": v[0], "max": v[-1],
            "ci_low": v[lo], "ci_high": v[hi], "precision": precision}


def too_slow(trials, cand_median, ref_median):
    return trials >= TOO_SLOW_TRIALS and cand_median > 0 and ref_median >= 0 and \
        ref_median < TOO_SLOW_SPEEDUP * cand_median


def should_stop(policy, trials, elapsed_ms, cand_precision, ref_precision, cand_median, ref_median):
    """None to go on, or why to stop: "max_trials", "too_slow", "precision", "budget".
    @policy has budget_ms, target_precision, min_trials, max_trials."""
    if trials >= policy.max_trials:
        return "max_trials"
    if too_slow(trials, cand_median, ref_median):
        return "too_slow"
    if trials >= policy.min_trials and cand_precision <= policy.target_precision and \
            ref_precision <= policy.target_precision:
        return "precision"
    if elapsed_ms >= policy.budget_ms and trials >= 3:
        return "budget"
    return None


def geomean(values):
    """The geometric mean of positive @values; 0 when one is not positive or there are none."""
    if not values or any(not (x > 0) for x in values):
        return 0.0
    return math.exp(sum(math.log(x) for x in values) / len(values))


# A candidate whose runs end on its own stream sooner than on the whole device
# by more than the reference's own gap plus this much (ms, and fraction of
# the stream time) left work on other streams after its last event.
STREAM_GAP_MS = 0.02
STREAM_GAP_FRACTION = 0.10


def pick_clock(cand_stream, cand_device, ref_stream, ref_device):
    """Which clock times this shape set: "stream" (events on the worker's
    stream: start before the forward, end right after it) or "device" (the
    same start, the end recorded after a device-wide synchronize, so work the
    candidate put on other streams counts). Each argument is a list of
    per-run durations (ms). The device clock also counts one host round trip,
    which the reference's runs measure: when the candidate's median gap
    between the clocks exceeds the reference's by more than STREAM_GAP_MS and
    STREAM_GAP_FRACTION of its stream time, the candidate ran work outside
    the worker's stream, and both sides are timed by the device clock."""
    def median(x):
        return summarize(x)["median"]
    cgap = median([d - s for s, d in zip(cand_stream, cand_device)])
    rgap = median([d - s for s, d in zip(ref_stream, ref_device)])
    if cgap - rgap > max(STREAM_GAP_MS, STREAM_GAP_FRACTION * median(cand_stream)):
        return "device"
    return "stream"
