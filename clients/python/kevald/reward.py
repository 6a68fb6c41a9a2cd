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


def _default_penalties():
    return {"compile_error": 0.0, "runtime_error": 0.0, "timeout": 0.0, "incorrect": 0.0, "rejected": 0.0,
            "compiled": 0.0, "suspicious": 0.0}


@dataclass
class RewardConfig:
    correct_bonus: float = 0.3
    speedup_cap: Optional[float] = 10.0
    log_speedup: bool = False
    penalties: Dict[str, float] = field(default_factory=_default_penalties)


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


def reward(x, config=None, **overrides):
    """
    The reward of @x (a Submission, Result, or their JSON dict), or None
    when there is none to train on (internal_error, cancelled, not done).
    A correct result with a suspicious timing gets penalties["suspicious"]
    (default 0.0), not a speedup-based reward.
    @config: a RewardConfig; keyword @overrides replace its fields
    (penalties are merged into the defaults).
    """
    cfg = config or DEFAULT
    if overrides:
        pen = dict(cfg.penalties)
        pen.update(overrides.pop("penalties", {}) or {})
        cfg = RewardConfig(**{**cfg.__dict__, **overrides, "penalties": pen})
    res = _result(x)
    if res is None or res.verdict is None or res.verdict in NO_REWARD:
        return None
    if res.verdict != "correct":
        return float(cfg.penalties.get(res.verdict, 0.0))
    if res.suspicious:
        return float(cfg.penalties.get("suspicious", 0.0))
    s = res.speedup
    s = 0.0 if s is None or not math.isfinite(s) or s < 0 else float(s)
    if cfg.speedup_cap is not None:
        s = min(s, cfg.speedup_cap)
    return cfg.correct_bonus + (math.log1p(s) if cfg.log_speedup else s)


def rewards(items, config=None, **overrides):
    """reward() of each item, in order (None kept)."""
    return [reward(x, config, **overrides) for x in items]
