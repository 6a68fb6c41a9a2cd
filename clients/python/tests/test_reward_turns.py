"""kevald.reward and kevald.turns: on result dicts shaped like the server's (docs/internals.md), and on real results."""
import math

import pytest

import kevald
from kevald import reward, turns
from conftest import BROKEN, GOOD, SLOW, run_id, unique


def res(verdict, speedup=None, **extra):
    d = {"verdict": verdict, "task": "t", "seed": "0123456789abcdef", "error": None, "feedback": "fb.",
         "reward_fields": {"compiled": verdict != "compile_error", "correct": verdict == "correct",
                           "speedup": speedup}}
    d.update(extra)
    return d


def test_default_kevin_form():
    assert reward.reward(res("correct", 2.0)) == pytest.approx(2.3)
    assert reward.reward(res("correct", 0.5)) == pytest.approx(0.8)
    assert reward.reward(res("correct", 37.0)) == pytest.approx(10.3)      # capped at 10
    assert reward.reward(res("correct", 37.0), speedup_cap=None) == pytest.approx(37.3)
    assert reward.reward(res("correct", None)) == pytest.approx(0.3)
    for v in ("incorrect", "compile_error", "runtime_error", "timeout", "rejected", "compiled"):
        assert reward.reward(res(v)) == 0.0
    assert reward.reward(res("internal_error")) is None
    assert reward.reward(res("cancelled")) is None
    # A Submission that is not done has no reward.
    assert reward.reward({"id": 1, "state": "queued", "verdict": None}) is None


def test_configurable():
    cfg = reward.RewardConfig(correct_bonus=1.0, speedup_cap=4.0, log_speedup=True,
                              penalties={"compile_error": -1.0, "incorrect": -0.5})
    assert reward.reward(res("correct", 3.0), cfg) == pytest.approx(1.0 + math.log1p(3.0))
    assert reward.reward(res("correct", 9.0), cfg) == pytest.approx(1.0 + math.log1p(4.0))
    assert reward.reward(res("compile_error"), cfg) == -1.0
    assert reward.reward(res("incorrect"), cfg) == -0.5
    assert reward.reward(res("timeout"), cfg) == 0.0
    assert reward.reward(res("compile_error"), penalties={"compile_error": -0.2}) == -0.2
    assert reward.reward(res("incorrect"), penalties={"compile_error": -0.2}) == 0.0
    assert reward.rewards([res("correct", 1.0), res("internal_error")]) == [pytest.approx(1.3), None]
    # Works on typed objects too.
    r = kevald.Result.from_dict(res("correct", 1.5))
    assert reward.reward(r) == pytest.approx(1.8)
    assert reward.reward(kevald.Submission.from_dict({"id": 3, "state": "done", "result": res("correct", 1.5)})) \
        == pytest.approx(1.8)
    with pytest.raises(TypeError):
        reward.reward(42)


def yardstick_res(speedup, eager, compile_, **extra):
    """A correct result whose reward_fields carry speedup_vs (None: no baseline on this GPU model)."""
    d = res("correct", speedup, **extra)
    d["reward_fields"]["speedup_vs"] = {"reference": speedup, "torch_eager": eager, "torch_compile": compile_}
    return d


def test_yardsticks():
    d = yardstick_res(2.0, 0.5, 4.0)
    # default: the strongest baseline, the smallest of the speedups
    assert reward.reward(d) == pytest.approx(0.8)
    assert reward.reward(d, yardstick="strongest") == pytest.approx(0.8)
    assert reward.reward(d, yardstick="reference") == pytest.approx(2.3)
    assert reward.reward(d, yardstick="torch_eager") == pytest.approx(0.8)
    assert reward.reward(d, yardstick="torch_compile") == pytest.approx(4.3)
    assert reward.reward(d, reward.RewardConfig(yardstick="reference")) == pytest.approx(2.3)
    assert reward.reward(yardstick_res(0.7, 0.9, 1.5)) == pytest.approx(1.0)   # the reference is the strongest
    assert reward.reward(yardstick_res(2.0, 30.0, 37.0), yardstick="torch_compile") == pytest.approx(10.3)  # cap
    assert reward.reward(yardstick_res(2.0, 3.0, 8.0), yardstick="torch_compile", log_speedup=True) \
        == pytest.approx(0.3 + math.log1p(8.0))
    assert reward.speedup_against(d, "torch_compile") == 4.0 and reward.speedup_against(d, "strongest") == 0.5
    # only one baseline measured (torch.compile failed for this task): strongest of what there is
    assert reward.reward(yardstick_res(2.0, 1.5, None)) == pytest.approx(1.8)
    assert reward.reward(yardstick_res(2.0, 1.5, None), yardstick="torch_compile") == pytest.approx(2.3)
    # no baseline on this GPU model: every yardstick is the reference's (the default as before)
    nb = yardstick_res(2.0, None, None)
    for y in reward.YARDSTICKS:
        assert reward.reward(nb, yardstick=y) == pytest.approx(2.3), y
    assert reward.speedup_against(nb, "torch_eager") is None and reward.speedup_against(nb, "strongest") == 2.0
    # a server that predates speedup_vs: the reference
    assert reward.reward(res("correct", 2.0)) == pytest.approx(2.3)
    assert reward.speedup_against(res("correct", 2.0), "torch_compile") is None
    # not correct or suspicious: speedup_vs is null, the penalties as before
    inc = res("incorrect")
    inc["reward_fields"]["speedup_vs"] = None
    assert reward.reward(inc) == 0.0 and reward.speedup_against(inc, "strongest") is None
    sus = suspicious_res(speedup_vs=None)
    assert reward.reward(sus, penalties={"suspicious": -1.0}) == -1.0
    # on typed objects and submissions too
    assert reward.reward(kevald.Result.from_dict(d)) == pytest.approx(0.8)
    assert reward.reward(kevald.Submission.from_dict({"id": 3, "state": "done", "result": d}),
                         yardstick="torch_compile") == pytest.approx(4.3)
    with pytest.raises(ValueError):
        reward.reward(d, yardstick="fastest")
    with pytest.raises(ValueError):
        reward.speedup_against(d, "roofline")


def suspicious_res(**rf_extra):
    """A correct result whose timing ran faster than the roofline allows, as the server sends it."""
    d = res("correct", None, timing={"speedup": 40.0, "suspicious": True, "note": "faster than the roofline", "shapes": [
        {"shape": "default", "speedup": 40.0, "roofline": {"min_ms": 0.01, "suspicious": True}}]})
    d["reward_fields"]["suspicious"] = True
    d["reward_fields"].update(rf_extra)
    return d


def test_suspicious_gets_the_penalty():
    sus = suspicious_res()
    # the default penalty is 0: no bonus and no speedup, though the verdict is correct
    assert reward.reward(sus) == 0.0
    assert reward.DEFAULT.penalties["suspicious"] == 0.0
    assert reward.reward(sus, penalties={"suspicious": -1.0}) == -1.0
    cfg = reward.RewardConfig(correct_bonus=1.0, log_speedup=True, penalties={"suspicious": -0.25})
    assert reward.reward(sus, cfg) == -0.25
    # a config whose penalties leave "suspicious" out falls back to 0
    assert reward.reward(sus, reward.RewardConfig(penalties={"incorrect": -1.0})) == 0.0
    # even a speedup left in reward_fields (a server that did not withhold it) is not paid
    assert reward.reward(suspicious_res(speedup=40.0)) == 0.0
    # on typed objects too
    assert reward.reward(kevald.Result.from_dict(sus), penalties={"suspicious": -2.0}) == -2.0
    sub = {"id": 9, "state": "done", "verdict": "correct", "speedup": None, "result": sus}
    assert reward.reward(sub, penalties={"suspicious": -0.5}) == -0.5
    assert reward.reward(kevald.Submission.from_dict(sub)) == 0.0


def test_suspicious_penalty_leaves_the_rest_alone():
    pen = {"suspicious": -1.0}
    assert reward.reward(res("correct", 2.0), penalties=pen) == pytest.approx(2.3)
    ok = res("correct", 2.0, timing={"speedup": 2.0, "suspicious": False, "shapes": [
        {"shape": "default", "speedup": 2.0, "roofline": {"min_ms": 0.001, "suspicious": False}}]})
    ok["reward_fields"]["suspicious"] = False
    assert reward.reward(ok, penalties=pen) == pytest.approx(2.3)
    assert reward.reward(ok, speedup_cap=1.5, penalties=pen) == pytest.approx(1.8)
    for v in ("incorrect", "compile_error", "timeout"):
        assert reward.reward(res(v), penalties=pen) == 0.0
    assert reward.reward(res("internal_error"), penalties=pen) is None
    # the penalty applies to correct results only: a flagged timing on another verdict changes nothing
    inc = suspicious_res()
    inc["verdict"], inc["reward_fields"]["correct"] = "incorrect", False
    assert reward.reward(inc, penalties={"suspicious": -1.0, "incorrect": -0.5}) == -0.5


def test_suspicious_properties():
    r = kevald.Result.from_dict(suspicious_res())
    assert r.suspicious is True and r.correct
    assert r.speedup is None                       # withheld; not taken from timing
    assert r.timing.speedup == 40.0 and r.timing.suspicious is True and r.timing.note
    s = kevald.Submission.from_dict({"id": 1, "state": "done", "speedup": None, "result": suspicious_res()})
    assert s.suspicious is True and s.speedup is None
    plain = kevald.Result.from_dict(res("correct", 1.5, timing={"speedup": 1.5, "shapes": []}))
    assert plain.suspicious is False and plain.speedup == 1.5
    assert kevald.Submission.from_dict({"id": 2, "state": "queued"}).suspicious is False
    assert kevald.Result.from_dict(res("compiled")).suspicious is False
    # a server that predates reward_fields.suspicious: read from the timing
    old = suspicious_res()
    del old["reward_fields"]["suspicious"]
    old["reward_fields"]["speedup"] = 40.0
    assert kevald.Result.from_dict(old).suspicious is True and reward.reward(old) == 0.0
    del old["timing"]["suspicious"]
    assert kevald.Result.from_dict(old).suspicious is True        # a shape's roofline flag
    old["timing"]["shapes"][0]["roofline"]["suspicious"] = False
    assert kevald.Result.from_dict(old).suspicious is False and reward.reward(old) == pytest.approx(10.3)


FULL_INCORRECT = res("incorrect", correctness={"passed": False, "shapes": [
    {"shape": "default", "passed": True, "buffers": [{"name": "y", "mismatches": 0, "count": 100}]},
    {"shape": "tiny", "passed": False, "trials": 2, "guard_ok": True, "inputs_intact": True,
     "buffers": [{"name": "y", "max_abs": 0.75, "max_rel": 1.0, "mismatches": 1, "count": 99,
                  "first_mismatches": [{"index": 98, "got": 0.0, "want": 0.75}]}]}]},
    error={"kind": "mismatch", "shape": "tiny", "message": "1 of 99 elements differ"},
    compile={"ok": True, "kernels": [{"name": "relu", "registers": 10, "shared_static": 0, "local": 0}]})

RUNTIME = res("runtime_error", error={"kind": "cuda", "name": "CUDA_ERROR_ILLEGAL_ADDRESS",
                                      "message": "an illegal memory access was encountered", "shape": "default",
                                      "phase": "correctness", "trial": 0, "launch": 0, "kernel": "relu"})

CORRECT = res("correct", 1.83, timing={"speedup": 1.83, "shapes": [
    {"shape": "default", "speedup": 1.83, "candidate": {"median_ms": 0.0123}, "reference": {"median_ms": 0.0225}}]},
    resources=[{"kernel": "relu", "registers": 16, "occupancy": {"fraction": 1.0}}])


def test_feedback_messages():
    m = turns.feedback_message(FULL_INCORRECT)
    assert m.startswith("Verdict: incorrect.")
    assert "Shape 'tiny' failed" in m and "[98] got 0 want 0.75" in m and "1 of 99" in m
    assert "Shape 'default'" not in m
    assert "relu (10 registers" in m and m.endswith("fb.")
    m = turns.feedback_message(RUNTIME)
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in m and "shape default" in m and "phase correctness" in m
    assert "kernel relu" in m and "launch 0" in m
    m = turns.feedback_message(CORRECT)
    assert "Speedup 1.83x" in m and "0.0123 ms vs reference 0.0225 ms" in m and "occupancy 1.0" in m
    assert turns.feedback_message({"id": 4, "state": "queued"}).startswith("Verdict: pending")
    nan = res("incorrect", correctness={"passed": False, "shapes": [{"shape": "small", "passed": False, "buffers": [
        {"name": "y", "mismatches": 0, "nan_inf_mismatches": 1, "count": 50,
         "first_mismatches": [{"index": 49, "got": "nan", "want": 1.5}]}]}]})
    m = turns.feedback_message(nan)
    assert "y: 1 of 50 elements wrong, 1 of them NaN/Inf disagreements" in m and "[49] got nan want 1.5" in m


def test_link_tags():
    parent = kevald.Submission.from_dict({"id": 41, "state": "done", "tags": {"run_id": "r", "turn": 2,
                                                                              "labels": {"k": "v"}}})
    sub = turns.link({"source": "x", "mode": "compile"}, parent)
    assert sub["tags"] == {"parent": 41, "turn": 3, "run_id": "r", "labels": {"k": "v"}}
    assert turns.link({"source": "x"}, 7)["tags"] == {"parent": 7, "turn": 1}
    original = {"source": "x", "tags": {"run_id": "mine"}}
    out = turns.link(original, parent)
    assert out["tags"]["run_id"] == "mine" and original["tags"] == {"run_id": "mine"}


def test_real_turns(server):
    rid = run_id()
    with kevald.Client(server.url) as c:
        first = c.evaluate(source=unique(BROKEN), mode="compile", tags={"run_id": rid, "turn": 1},
                           timeout=60 * SLOW)
        assert reward.reward(first) == 0.0
        assert reward.reward(first, penalties={"compile_error": -1}) == -1.0
        msg = turns.feedback_message(first)
        assert msg.startswith("Verdict: compile_error.") and "undefined_name_xq" in msg
        assert msg.count("undefined_name_xq") >= 2       # the log's first error and kevald's feedback
        second = c.evaluate(turns.link({"source": unique(GOOD), "mode": "compile"}, first), timeout=60 * SLOW)
        assert second.tags["parent"] == first.id and second.tags["turn"] == 2 and second.tags["run_id"] == rid
        assert second.verdict == "compiled" and reward.reward(second) == 0.0
        assert "Compiled kernels: saxpy" in turns.feedback_message(second)
