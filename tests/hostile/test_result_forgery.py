"""
Forged GPU RESULTs: a GPU worker is a process that runs untrusted kernels, so
what it reports is checked before it becomes a stored verdict or reward
(server/dispatch/resultcheck.c). The GPU workers here are the tests' stand-in
(tests/pylib/standin_gpu_worker.py, "the fake": the real frame protocol, no
GPU needed) with the real compile workers; a candidate kernel's name picks
what the fake reports. A forged RESULT must never be stored as "correct" with its
speedup: its worker is killed, the job is tried again, and after
max_attempts (3) such answers it ends as internal_error with no reward.
"""
import copy
import json
import os

import pytest

import standin_gpu_worker as standin
from conftest import LIBEXEC, wait_done

TASK = {
    "name": "forgery_vecadd", "title": "Vector add", "description": "c = a + b", "level": 1,
    "category": "elementwise", "params": {"N": "length"}, "shapes": [{"name": "default", "N": 4096}],
    "buffers": [
        {"name": "a", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
        {"name": "b", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
        {"name": "c", "dtype": "f32", "shape": ["N"], "role": "out"},
    ],
    "reference": {
        "source": 'extern "C" __global__ void vecadd_ref(const float *a, const float *b, float *c, int n)'
                  ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }',
        "plan": [{"kernel": "vecadd_ref", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                  "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}],
    },
}


def full(marker=None):
    name = "vecadd" if marker is None else f"vecadd_FAKEV_{marker}"
    return {"mode": "full", "task_spec": copy.deepcopy(TASK),
            "source": TASK["reference"]["source"].replace("vecadd_ref", name),
            "plan": [dict(TASK["reference"]["plan"][0], kernel=name)]}


@pytest.fixture
def gpu_server(make_server, tmp_path):
    libexec = tmp_path / "libexec"
    libexec.mkdir()
    os.symlink(LIBEXEC / "kevald-compile", libexec / "kevald-compile")
    fake_log = standin.install(libexec, {"work_s": 0.01})
    s = make_server("--libexec", str(libexec), "--gpus", "0", "--gpu-workers-per-gpu", "2", ready=False)
    s.wait_ready(timeout=60)
    s.fake_log = fake_log
    return s


def fake_jobs(s, sid):
    lines = s.fake_log.read_text().splitlines() if s.fake_log.exists() else []
    return [e for e in map(json.loads, lines) if e.get("ev") == "job" and e.get("id") == sid]


@pytest.mark.parametrize("marker,why", [
    ("forged_speedup", "/timing/shapes/0/speedup is not the reference median over the candidate's"),
    ("forged_roofline", "under half the roofline bound but not flagged suspicious"),
    ("forged_correct", "/correctness is not an object"),
])
def test_forged_gpu_result_is_no_reward(gpu_server, marker, why):
    s = gpu_server
    with s.client() as c:
        r = c.post("/v1/submissions", json={"submissions": [full(marker), full()]})
        assert r.status_code == 202, r.text
        forged, honest = r.json()["ids"]
        d = wait_done(c, forged, wait=90)
        assert d["verdict"] == "internal_error", json.dumps(d)[:2000]
        assert d["speedup"] is None and d["result"]["reward_fields"]["correct"] is False, d
        assert d["result"]["reward_fields"]["speedup"] is None, d["result"]["reward_fields"]
        assert why in d["result"]["error"]["message"], d["result"]["error"]
        assert "not the kernel's" in d["result"]["error"]["message"], d["result"]["error"]
        assert len(fake_jobs(s, forged)) == 3, fake_jobs(s, forged)   # max_attempts GPU runs, no more
        assert "sent an invalid RESULT" in s.log_text()
        # the honest submission beside it is judged as its worker says
        h = wait_done(c, honest, wait=90)
        assert h["verdict"] == "correct" and h["result"]["reward_fields"]["speedup"] == 1.0, json.dumps(h)[:2000]
        # and only it is on the task's leaderboard
        top = c.get("/v1/submissions", params={"task": TASK["name"], "verdict": "correct"}).json()
        assert [i["id"] for i in top["items"]] == [honest], top
