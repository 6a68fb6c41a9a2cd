#!/usr/bin/env python3
"""
The service's own cost of a kernelbench candidate (issue 29), against a CUDA
one's, on one GPU slot: a local `kevald serve` from this tree whose
kevald-gpu and kevald-torch are the test stand-ins (tests/pylib) with no
work (work_s 0), so what is timed is the dispatcher, the store and the
frames: acceptance, the build (or the compile cache), the run stage on the
shared GPU slot, the result.

Each repeat runs three rounds of N full-mode submissions in one batch, timed
from the POST to the last one done:
  kb_miss  N kernelbench candidates with distinct sources (N builds)
  kb_hit   N kernelbench candidates of one source (one build, N-1 cache hits)
  cuda     N CUDA candidates of one source (compile cache hits), the
           kevald-gpu path, as the yardstick
and prints candidates per second and the ratios within the repeat.

usage: python3 bench/kernelbench/bench_dispatch.py [--n 60] [--repeats 3]
(KEVALD_BUILD_ROOT: the meson build folder, default ./build)
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "pylib"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))
os.environ.setdefault("KEVALD_SOURCE_ROOT", str(ROOT))
os.environ.setdefault("KEVALD_BUILD_ROOT", str(ROOT / "build"))

import kevaldserver  # noqa: E402
import standin_gpu_worker  # noqa: E402
import standin_torch_worker  # noqa: E402

VECADD_TASK = {
    "name": "bench_vecadd", "title": "Vector add", "description": "c = a + b", "level": 1,
    "category": "elementwise", "params": {"N": "length"}, "shapes": [{"name": "default", "N": 4096}],
    "buffers": [{"name": "a", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
                {"name": "b", "dtype": "f32", "shape": ["N"], "role": "in", "init": {"dist": "normal"}},
                {"name": "c", "dtype": "f32", "shape": ["N"], "role": "out"}],
    "reference": {"source": 'extern "C" __global__ void vecadd_ref(const float *a, const float *b, float *c, int n)'
                            ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }',
                  "plan": [{"kernel": "vecadd_ref", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                            "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}]},
}
VECADD_SOURCE = ('extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n)'
                 ' { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }')
VECADD_PLAN = [{"kernel": "vecadd", "grid": ["ceil_div(N, 256)"], "block": [256], "shared": "0",
                "args": ["a", "b", "c", {"type": "i32", "value": "N"}]}]
MODEL_NEW = "import torch\nimport torch.nn as nn\n# {salt}\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" \
            "        return torch.softmax(x, dim=1)\n"


def cuda_sub():
    return {"task_spec": VECADD_TASK, "source": VECADD_SOURCE, "plan": VECADD_PLAN, "mode": "full"}


def kb_sub(salt):
    return {"task": "l1_23_softmax", "language": "kernelbench", "source": MODEL_NEW.format(salt=salt)}


def timed_round(client, subs):
    t0 = time.monotonic()
    r = client.post("/v1/submissions", json={"submissions": subs})
    assert r.status_code == 202, r.text
    for sid in r.json()["ids"]:
        while True:
            body = client.get(f"/v1/submissions/{sid}", params={"wait": 30}).json()
            if body["state"] == "done":
                assert body["result"]["verdict"] == "correct", body["result"]
                break
    return len(subs) / (time.monotonic() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kevald-bench-kb-") as d:
        d = Path(d)
        libexec = d / "libexec"
        libexec.mkdir()
        os.symlink(kevaldserver.LIBEXEC / "kevald-compile", libexec / "kevald-compile")
        standin_gpu_worker.install(libexec, {"work_s": 0})
        standin_torch_worker.install(libexec, {"work_s": 0})
        tasks = d / "tasks"
        shutil.copytree(kevaldserver.FIXTURE_TASKS, tasks)
        shutil.copytree(ROOT / "tests" / "fixtures" / "kernelbench", tasks / "kernelbench")
        srv = kevaldserver.Server(d / "srv", ["--libexec", str(libexec), "--gpus", "0", "--gpu-workers-per-gpu", "1",
                                              "--torch-workers", "1", "--torch-python", sys.executable,
                                              "--tasks", str(tasks), "--torch-ext-dir", str(d / "ext")])
        srv.start()
        try:
            srv.wait_ready()
            with srv.client(timeout=120) as c:
                deadline = time.monotonic() + 30
                while not all(w["state"] == "ready" for w in (c.get("/readyz").json().get("torch") or {}).get("run") or [{"state": ""}]):
                    assert time.monotonic() < deadline, "torch workers not ready"
                    time.sleep(0.05)
                timed_round(c, [cuda_sub(), kb_sub("warm")])  # the reference and the first build
                rows = []
                for rep in range(args.repeats):
                    salt = os.urandom(6).hex()
                    miss = timed_round(c, [kb_sub(f"{salt}-{i}") for i in range(args.n)])
                    hit = timed_round(c, [kb_sub(salt + "-hit") for _ in range(args.n)])
                    cuda = timed_round(c, [cuda_sub() for _ in range(args.n)])
                    rows.append({"repeat": rep, "kb_miss_per_s": miss, "kb_hit_per_s": hit, "cuda_per_s": cuda,
                                 "kb_miss_over_cuda": miss / cuda, "kb_hit_over_cuda": hit / cuda})
                    print(json.dumps(rows[-1]), flush=True)
        finally:
            rc = srv.stop()
            assert rc == 0, f"kevald exited {rc}"


if __name__ == "__main__":
    main()
