"""
Every yardstick through the real server (server/dispatch/pipeline.c, common/baselines.c):
a task library with a baselines/ folder, the fake GPU worker timing the
first shape set (candidate 0.5 ms, reference 1.0 ms, roofline 0.1 ms), and

- a library task with a baseline for the fake GPU's model: timing.shapes[0]
  and timing carry speedup_vs {reference 2, torch_eager 0.25/0.5,
  torch_compile 2.0/0.5} and roofline_fraction 0.2, reward_fields copies
  them, the feedback names torch eager as the strongest baseline;
- another shape set of it, whose torch.compile run failed: null there;
- a library task measured only on another GPU model: null baselines, never
  a guess (the reference and the roofline stay);
- the same task name sent inline (task_spec): no baselines either;
- a baseline entry measured with other params than the task's shape set:
  dropped at start-up, so null;
- `kevald eval` of a library task: the same yardsticks (the same dispatcher).

Every result validates against schema/result.schema.json.
"""
import copy
import json
import subprocess
import sys

import pytest

from conftest import KEVALD, SLOW, SOURCE_ROOT, VECADD_PLAN, VECADD_SOURCE, VECADD_TASK, unique
from schemacheck import Registry, Validator
from test_gpu_scheduling import FakeGpuServer, full

SCHEMA_DIR = SOURCE_ROOT / "schema"
sys.path.insert(0, str(SOURCE_ROOT / "tools" / "baselines"))
import protocol  # noqa: E402  (tools/baselines: the baseline file's format and the GPU slug)
FAKE_GPU = "Fake GPU (kevald tests)"  # the stand-in GPU worker's default device name; slug fake-gpu-kevald-tests


def write_library(root):
    """it_vecadd (baselines on the fake GPU), it_vecadd2 (on an H100 only), it_vecadd3 (stale params)."""
    (root / "elementwise").mkdir(parents=True)
    (root / "baselines").mkdir()
    for name in ("it_vecadd", "it_vecadd2", "it_vecadd3"):
        task = copy.deepcopy(VECADD_TASK)
        task["name"] = name
        (root / "elementwise" / f"{name}.json").write_text(json.dumps(task))
    # the fake GPU's file as tools/baselines writes it (its protocol module), so the format is checked end to end
    fake = protocol.new_doc(FAKE_GPU, {"torch": "2.11.0", "cuda": "12.8"}, protocol.POLICY)
    protocol.set_result(fake, "it_vecadd", "default", {"N": 4096}, "eager", 0.25, detail={"trials": 6})
    protocol.set_result(fake, "it_vecadd", "default", {"N": 4096}, "compile", 2.0, detail={"trials": 6})
    protocol.set_result(fake, "it_vecadd", "odd", {"N": 1001}, "eager", 0.1)
    protocol.set_result(fake, "it_vecadd", "odd", {"N": 1001}, "compile", None, "RuntimeError: fake compile failure")
    protocol.set_result(fake, "it_vecadd3", "default", {"N": 4000}, "eager", 0.25)
    protocol.set_result(fake, "it_vecadd3", "default", {"N": 4000}, "compile", 2.0)
    h100 = {"format": 1, "gpu": "NVIDIA H100 80GB HBM3", "tasks": {
        "it_vecadd2": {"default": {"params": {"N": 4096}, "eager_ms": 0.25, "compile_ms": 2.0}}}}
    (root / "baselines" / (protocol.slug(FAKE_GPU) + ".json")).write_text(json.dumps(fake, allow_nan=False))
    (root / "baselines" / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps(h100))


@pytest.fixture(scope="module")
def fake(tmp_module):
    lib = tmp_module / "tasks"
    write_library(lib)
    fs = FakeGpuServer(tmp_module / "yardsticks", gpus="0", per_gpu=1, knobs={"work_s": 0.01},
                       args=["--tasks", str(lib)]).start()
    fs.library = lib  # for kevald eval
    yield fs
    rc = fs.stop()
    assert rc == 0, f"kevald exited {rc} on SIGTERM:\n{fs.server.log_tail()}"


def timed(task, **extra):
    """A full-mode submission of library task @task that the fake times (marker "timed")."""
    plan = copy.deepcopy(VECADD_PLAN)
    plan[0]["kernel"] = "vecadd_FAKEV_timed"
    sub = {"mode": "full", "task": task, "plan": plan,
           "source": unique(VECADD_SOURCE.replace("void vecadd(", "void vecadd_FAKEV_timed("))}
    sub.update(extra)
    return sub


def schema_errors(result):
    reg = Registry(SCHEMA_DIR)
    return Validator(reg).errors(result, json.loads((SCHEMA_DIR / "result.schema.json").read_text()),
                                 "result.schema.json")


def approx(v, want):
    return v is not None and abs(v - want) < 1e-9 * abs(want)


def test_speedup_vs_every_yardstick(fake):
    inline = full("timed")
    ids = fake.submit([timed("it_vecadd"), timed("it_vecadd", shapes=["odd"]), timed("it_vecadd2"),
                       inline, timed("it_vecadd3")])
    done = fake.wait_all(ids)
    with_bl, odd, other_gpu, inl, stale = (done[i]["result"] for i in ids)
    for res in (with_bl, odd, other_gpu, inl, stale):
        assert res["verdict"] == "correct", res
        assert res["gpu"]["name"] == FAKE_GPU, res["gpu"]
        assert not schema_errors(res), schema_errors(res)

    # Baselines on this GPU model: every yardstick, per shape set and overall, and in reward_fields.
    shape = with_bl["timing"]["shapes"][0]
    assert shape["shape"] == "default", shape
    want = {"reference": 2.0, "torch_eager": 0.5, "torch_compile": 4.0}
    for k, v in want.items():
        assert approx(shape["speedup_vs"][k], v), shape["speedup_vs"]
        assert approx(with_bl["timing"]["speedup_vs"][k], v), with_bl["timing"]
        assert approx(with_bl["reward_fields"]["speedup_vs"][k], v), with_bl["reward_fields"]
    assert approx(shape["roofline_fraction"], 0.2), shape
    assert approx(with_bl["timing"]["roofline_fraction"], 0.2), with_bl["timing"]
    assert approx(with_bl["reward_fields"]["roofline_fraction"], 0.2), with_bl["reward_fields"]
    assert with_bl["reward_fields"]["speedup"] == 2.0, with_bl["reward_fields"]
    fb = with_bl["feedback"]
    assert "Yardsticks: 2x the reference, 0.5x torch eager (the strongest baseline), 4x torch.compile." in fb, fb
    assert "20% of the roofline bound." in fb, fb

    # The odd shape set: eager measured (0.1 ms), compile failed -> null.
    shape = odd["timing"]["shapes"][0]
    assert shape["shape"] == "odd", shape
    assert approx(shape["speedup_vs"]["torch_eager"], 0.2) and shape["speedup_vs"]["torch_compile"] is None, shape
    assert approx(odd["reward_fields"]["speedup_vs"]["torch_eager"], 0.2), odd["reward_fields"]
    assert odd["reward_fields"]["speedup_vs"]["torch_compile"] is None, odd["reward_fields"]

    # Sent inline: the result says so (per-task records of the library leave it out); the library's do not.
    assert inl.get("task_inline") is True and "task_inline" not in with_bl, (inl.get("task_inline"), with_bl)
    # Measured on another GPU model only; sent inline; measured at other params: no baseline.
    for res in (other_gpu, inl, stale):
        for vs in (res["timing"]["shapes"][0]["speedup_vs"], res["timing"]["speedup_vs"],
                   res["reward_fields"]["speedup_vs"]):
            assert vs == {"reference": 2.0, "torch_eager": None, "torch_compile": None}, res
        assert approx(res["reward_fields"]["roofline_fraction"], 0.2), res["reward_fields"]
        assert "Yardsticks" not in res["feedback"] and "20% of the roofline bound." in res["feedback"], res
    log = fake.server.log_text()
    assert "fake-gpu-kevald-tests.json': 1 entry dropped" in log, log[-3000:]


def test_task_leaderboard_carries_every_yardstick(fake):
    """The dashboard's task leaderboard gives each row its result's speedup_vs, so the page can rank by
    the yardstick the reader picks: the baselines of this GPU model where the library has them."""
    ids = fake.submit([timed("it_vecadd"), timed("it_vecadd2")])
    done = fake.wait_all(ids)
    with fake.server.client() as c:
        for task, sid, want in (("it_vecadd", ids[0], {"reference": 2.0, "torch_eager": 0.5, "torch_compile": 4.0}),
                                ("it_vecadd2", ids[1], {"reference": 2.0, "torch_eager": None, "torch_compile": None})):
            r = c.get(f"/v1/dashboard/tasks/{task}", params={"limit": 100})
            assert r.status_code == 200, r.text
            row = next(x for x in r.json()["leaderboard"] if x["id"] == sid)
            assert row["speedup_vs"] == done[sid]["result"]["reward_fields"]["speedup_vs"], (row, done[sid])
            for k, v in want.items():
                assert (row["speedup_vs"][k] is None) if v is None else approx(row["speedup_vs"][k], v), row


def test_stored_reward_takes_the_strongest_yardstick(fake):
    """The dashboard's stored reward is the client's default reward(): against the strongest yardstick."""
    sys.path.insert(0, str(SOURCE_ROOT / "clients" / "python"))
    from kevald import reward as kreward
    run = "yard-" + unique("")[3:15]
    ids = fake.submit([timed("it_vecadd", tags={"run_id": run, "step": 1}),
                       timed("it_vecadd2", tags={"run_id": run, "step": 2})])
    done = fake.wait_all(ids)
    want = [kreward.reward(done[i]) for i in ids]
    assert want == [0.3 + 0.5, 0.3 + 2.0], want   # eager 0.5x is the strongest; no baseline: the reference
    with fake.server.client() as c:
        steps = c.get("/v1/dashboard/run", params={"id": run}).json()["steps"]
    got = {x["step"]: x["mean_reward"] for x in steps}
    assert abs(got[1] - want[0]) < 1e-9 and abs(got[2] - want[1]) < 1e-9, (got, want)


def test_no_timing_no_yardsticks(fake):
    ids = fake.submit([full("incorrect"), full()])
    done = fake.wait_all(ids)
    bad, plain = (done[i]["result"] for i in ids)
    assert bad["reward_fields"]["speedup_vs"] is None and bad["reward_fields"]["roofline_fraction"] is None, bad
    assert "speedup_vs" not in (bad.get("timing") or {}), bad
    # the fake's plain "correct" has no timed shape sets: only timing.speedup against the reference
    assert plain["timing"]["speedup_vs"] == {"reference": 1.0, "torch_eager": None, "torch_compile": None}, plain
    assert plain["timing"]["roofline_fraction"] is None, plain
    for res in (bad, plain):
        assert not schema_errors(res), schema_errors(res)


def test_eval_carries_the_yardsticks(fake, tmp_path):
    """kevald eval of a library task goes through the same dispatcher: the baselines apply."""
    sub = timed("it_vecadd")
    (tmp_path / "k.cu").write_text(sub["source"])
    (tmp_path / "plan.json").write_text(json.dumps(sub["plan"]))
    p = subprocess.run([str(KEVALD), "eval", "--task", "it_vecadd", "--tasks", str(fake.library),
                        "--source", str(tmp_path / "k.cu"), "--plan", str(tmp_path / "plan.json"),
                        "--libexec", str(fake.libexec), "--gpus", "0"],
                       capture_output=True, text=True, timeout=60 * SLOW)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["verdict"] == "correct", res
    assert res["timing"]["speedup_vs"] == {"reference": 2.0, "torch_eager": 0.5, "torch_compile": 4.0}, res
    assert res["reward_fields"]["speedup_vs"] == res["timing"]["speedup_vs"], res
    assert "0.5x torch eager (the strongest baseline)" in res["feedback"], res["feedback"]
    assert not schema_errors(res), schema_errors(res)
