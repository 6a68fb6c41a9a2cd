"""
Rewards for RL from kevald results.

The default is the Kevin-32B form: `correct_bonus * correct + speedup *
correct` = 0.3 + speedup for a correct kernel, with the speedup capped at
`speedup_cap` (10) so one lucky timing cannot dominate a batch. With
`log_speedup=True` the speed term is `ln(1 + speedup)` instead (compresses
large speedups, still monotone and positive). Every other verdict gets its
entry of `penalties` (0 by default; set negatives to punish compile errors,
say): compile_error, runtime_error, timeout, incorrect, rejected, and
compiled (a compile-mode result: it says nothing about correctness).

A correct result whose timing is suspicious (faster than half the roofline
bound: `reward_fields.suspicious`, see `Result.suspicious`) gets
`penalties["suspicious"]` (0 by default) instead: the server withholds its
speedup, and neither the bonus nor a speedup is paid for the impossible.

The speedup is against a yardstick (`yardstick=`, docs/clients.md):
"reference" (the task's reference kernel: reward_fields.speedup),
"torch_eager" or "torch_compile" (the task's PyTorch expression, measured
on this GPU model: reward_fields.speedup_vs), or "strongest", the default:
the smallest of the speedups available, i.e. against the fastest of the
three. Where the server has no baseline for the result's GPU model and
shape set (speedup_vs.torch_* null, or a server that predates speedup_vs),
every yardstick falls back to the reference, so the default is then the
reference's speedup as before; `speedup_against()` gives the strict
figure (None where there is none).

`internal_error` and `cancelled` give None: an infrastructure fault (or a
withdrawn submission) says nothing about the kernel, so drop the sample
rather than train on it. A submission that is not done also gives None.
A done submission listed without its result (history(include_result=False))
raises ValueError rather than pass for "no reward".

The defaults are also the dashboard's reward, which the server stores per
result (migrations/007_dashboard_reward.sql, v_job_metrics.reward);
tests/integration/test_dashboard.py checks the two agree: change both.
"""
import math
from dataclasses import dataclass, field
from typing import Dict, Optional

from .models import Result, Submission

NO_REWARD = ("internal_error", "cancelled")
YARDSTICKS = ("reference", "torch_eager", "torch_compile", "strongest")


def _default_penalties():
    return {"compile_error": 0.0, "runtime_error": 0.0, "timeout": 0.0, "incorrect": 0.0, "rejected": 0.0,
            "compiled": 0.0, "suspicious": 0.0}


@dataclass
class RewardConfig:
    correct_bonus: float = 0.3
    speedup_cap: Optional[float] = 10.0
    log_speedup: bool = False
    penalties: Dict[str, float] = field(default_factory=_default_penalties)
    yardstick: str = "strongest"


DEFAULT = RewardConfig()


def _result(x):
    if isinstance(x, Submission):
        if x.result is None and x.state == "done":
            raise ValueError(f"submission {x.id} is done but was listed without its result: use "
                             "history(include_result=True) (the default) or get()")
        return x.result
    if isinstance(x, Result):
        return x
    if isinstance(x, dict):
        if "result" in x or "state" in x:
            if not isinstance(x.get("result"), dict) and x.get("state") == "done":
                raise ValueError(f"submission {x.get('id')} is done but came without its result: list with "
                                 "include=result (history() does by default) or GET it")
            return Result.from_dict(x["result"]) if isinstance(x.get("result"), dict) else None
        return Result.from_dict(x)
    raise TypeError(f"reward() takes a Submission, Result or dict, not {type(x).__name__}")


def speedup_against(x, yardstick):
    """
    The speedup of @x (a Submission, Result, or their JSON dict) against
    @yardstick, strictly: "reference" is Result.speedup; "torch_eager" and
    "torch_compile" are reward_fields.speedup_vs's (None where the server
    has no baseline for the GPU model and shape set, the result is not
    correct or is suspicious); "strongest" is the smallest of those present.
    None when there is none.
    """
    if yardstick not in YARDSTICKS:
        raise ValueError(f"yardstick must be one of {', '.join(YARDSTICKS)}, not {yardstick!r}")
    res = _result(x)
    if res is None:
        return None
    ref = res.speedup
    vs = (res.reward_fields or {}).get("speedup_vs") or {}
    got = {"reference": ref if isinstance(ref, (int, float)) and math.isfinite(ref) else None}
    for k in ("torch_eager", "torch_compile"):
        v = vs.get(k)
        got[k] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
            and v > 0 else None
    if yardstick != "strongest":
        return got[yardstick]
    present = [v for v in got.values() if v is not None]
    return min(present) if present else None


def reward(x, config=None, **overrides):
    """
    The reward of @x (a Submission, Result, or their JSON dict), or None
    when there is none to train on (internal_error, cancelled, not done).
    A correct result with a suspicious timing gets penalties["suspicious"]
    (default 0.0), not a speedup-based reward.
    @config: a RewardConfig; keyword @overrides replace its fields
    (penalties are merged into the defaults).
    yardstick= "reference" | "torch_eager" | "torch_compile" | "strongest"
    (default): the speedup the reward pays, see the module's doc; a
    yardstick without a figure for this result (no baseline for its GPU
    model) falls back to the reference, so "strongest" is the smallest of
    the available speedups and, without baselines, the reference's.
    """
    cfg = config or DEFAULT
    if overrides:
        pen = dict(cfg.penalties)
        pen.update(overrides.pop("penalties", {}) or {})
        cfg = RewardConfig(**{**cfg.__dict__, **overrides, "penalties": pen})
    if cfg.yardstick not in YARDSTICKS:
        raise ValueError(f"yardstick must be one of {', '.join(YARDSTICKS)}, not {cfg.yardstick!r}")
    res = _result(x)
    if res is None or res.verdict is None or res.verdict in NO_REWARD:
        return None
    if res.verdict != "correct":
        return float(cfg.penalties.get(res.verdict, 0.0))
    if res.suspicious:
        return float(cfg.penalties.get("suspicious", 0.0))
    s = speedup_against(res, cfg.yardstick)
    if s is None:
        s = res.speedup  # no baseline on this GPU model: the reference
    s = 0.0 if s is None or not math.isfinite(s) or s < 0 else float(s)
    if cfg.speedup_cap is not None:
        s = min(s, cfg.speedup_cap)
    return cfg.correct_bonus + (math.log1p(s) if cfg.log_speedup else s)


def rewards(items, config=None, **overrides):
    """reward() of each item, in order (None kept)."""
    return [reward(x, config, **overrides) for x in items]
