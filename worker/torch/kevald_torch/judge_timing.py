"""
judge_timing - the timing phase of one shape set (torch).

Pairs, candidate first: each pair's inputs are generated fresh from the
pair's own seed (the candidate's copy, then the reference's), the L2 cache is
flushed before each side, and each side's forward is timed with CUDA events
on the worker's stream: `start` before the forward, `mid` right after it
returns, then a device-wide synchronize and `end`. start->mid is the stream
clock; start->end the device clock, which also counts work the candidate left
on other streams (stats.pick_clock() chooses, for both sides alike). After
every pair the candidate's outputs are checked (placement, inputs unchanged,
values against the reference's on the same inputs): an output that is right
only sometimes, or cached from earlier inputs, fails here as a mismatch in
phase "revalidation" with its timed_run. Warm-up pairs are checked and count
for the too-slow rule but not in the statistics. Trials adapt: stats.should_stop().
"""
import time

import torch

from . import judge_check, result, seeds, stats

_Event, _sync, _no_grad = torch.cuda.Event, torch.cuda.synchronize, torch.no_grad


class Policy:
    def __init__(self, job, budget_ms):
        self.budget_ms = budget_ms
        self.target_precision = job.target_precision
        self.min_trials = job.min_trials
        self.max_trials = job.max_trials
        self.warmup = job.warmup


def timed(fn, args, flush, returned=None):
    """Run @fn(*args) once between events; returns (output, stream ms, device ms).
    @returned() is called when @fn has returned, before its work is waited for
    (the judge's launch limit of a model's first forward starts there)."""
    flush.zero_()
    start, mid, end = _Event(enable_timing=True), _Event(enable_timing=True), _Event(enable_timing=True)
    start.record()
    with _no_grad():
        out = fn(*args)
    mid.record()
    if returned is not None:
        returned()
    _sync()
    end.record()
    end.synchronize()
    return out, start.elapsed_time(mid), start.elapsed_time(end)


def time_shape(judge, si, shape, model, model_new, budget_ms):
    """Time shape set @si; returns its timing.shapes[] entry. Raises
    judge_check.CheckFail for a run whose outputs or inputs are wrong; the
    candidate's own exceptions propagate (judge.py names them)."""
    job = judge.job
    policy = Policy(job, budget_ms)
    cs, cd, rs, rd = [], [], [], []
    all_c, all_r, all_cd, all_rd = [], [], [], []
    t0 = time.monotonic()
    k = 0
    stop = None
    while stop is None:
        seed = seeds.derive(job.seed, si, "time", k)
        judge.phase(shape["name"], "timing", k)
        xs_c = judge.inputs(seed)
        out_c, c_s, c_d = judge.candidate(lambda: timed(model_new, xs_c, judge.flush, judge.after_forward),
                                             forward=True)
        outs_c = judge_check.flatten(out_c)
        judge_check.check_placement(outs_c, xs_c)
        xs_r = judge.inputs(seed)
        judge_check.check_inputs(xs_c, xs_r)
        out_r, r_s, r_d = judge.reference(lambda: timed(model, xs_r, judge.flush))
        outs_r = judge_check.flatten(out_r)
        for (name, g), (_, w) in zip(outs_c, outs_r):
            b = judge_check.compare(name, g, w, shape["atol"], shape["rtol"])
            if b["mismatches"]:
                raise judge_check.CheckFail(
                    "mismatch", f"timed run {k}: {b['mismatches']} of {b['count']} elements of {name} differ "
                    "from the reference on the same inputs", buffer=name, timed_run=k,
                    mismatches=b["mismatches"], nan_inf_mismatches=b["nan_inf_mismatches"], count=b["count"],
                    max_abs=b["max_abs"], max_rel=b["max_rel"],
                    first_index=b["first_mismatches"][0]["index"] if b["first_mismatches"] else None)
        if len(outs_c) != len(outs_r):
            raise judge_check.CheckFail("mismatch", f"timed run {k}: {len(outs_c)} outputs, the reference "
                                        f"returns {len(outs_r)}", timed_run=k)
        judge.busy_ms += c_d + r_d
        xs_c = xs_r = out_c = out_r = outs_c = outs_r = None   # free before the next pair's inputs
        all_c.append(c_s)
        all_r.append(r_s)
        all_cd.append(c_d)
        all_rd.append(r_d)
        if k >= policy.warmup:
            cs.append(c_s)
            cd.append(c_d)
            rs.append(r_s)
            rd.append(r_d)
        k += 1
        elapsed = (time.monotonic() - t0) * 1000.0
        if cs:
            c, r = stats.summarize(cs), stats.summarize(rs)
            stop = stats.should_stop(policy, len(cs), elapsed, c["precision"], r["precision"],
                                     c["median"], r["median"])
        if stop is None and stats.too_slow(len(all_c), stats.summarize(all_c)["median"],
                                           stats.summarize(all_r)["median"]):
            stop = "too_slow"
            if not cs:   # stopped within the warm-up: its pairs are the samples
                cs, rs, cd, rd = all_c, all_r, all_cd, all_rd
    clock = stats.pick_clock(cs, cd, rs, rd)
    cand, ref = (cd, rd) if clock == "device" else (cs, rs)
    return result.shape_timing(shape["name"], cand, ref, stop, k, clock)
