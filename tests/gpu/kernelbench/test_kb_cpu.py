#!/usr/bin/env python3
"""
run.py's KernelBench-style mode on the CPU (--kb-cpu, --kb-shape tiny) for
the samples that need no GPU: each must get the verdict the manifest
predicts for KernelBench's own evaluation (`kernelbench`), which exercises
that mode's steps with a real torch: the seeded Model and ModelNew, the
trials, the shape check, allclose, the exceptions KernelBench catches and
those it does not, the per-sample time limit. Needs a python3 with torch
(this one, or /usr/bin/python3 where Debian's python3-torch lives) and the
KernelBench task family (tasks/kernelbench/index.json, or $KEVALD_KB_TASKS);
exits 77 (skipped) without them. About 20 s.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TASKS = os.environ.get("KEVALD_KB_TASKS", os.path.join(ROOT, "tasks", "kernelbench"))
# The CPU path is the GPU path for these (no CUDA code, no half-precision math,
# no shape-dependent branch).
SAMPLES = ["torch_gelu_erf", "torch_linear_scale_residual", "torch_sum_no_keepdim",
           "torch_sigmoid_lazy_after_warmup", "torch_relu_inplace_alias", "torch_ctor_mismatch",
           "model_new_not_module", "no_model_new", "python_syntax_error", "torch_python_hang"]


def torch_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def main():
    py = torch_python()
    if py is None:
        print("skipped: no python3 with torch")
        return 77
    if not os.path.exists(os.path.join(TASKS, "index.json")):
        print(f"skipped: no {TASKS}/index.json")
        return 77
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kb-cpu-{os.getpid()}.json")
    cmd = [py, os.path.join(HERE, "run.py"), "--kernelbench", "--kb-cpu", "--kb-shape", "tiny", "--kb-perf", "5",
           "--kb-timeout", "8", "--kb-build-jobs", "0", "--tasks-dir", TASKS, "--out", out]
    for n in SAMPLES:
        cmd += ["--only", n]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    print(r.stdout)
    if r.returncode != 0:
        print(r.stderr)
        print(f"FAIL: run.py exited {r.returncode}")
        return 1
    try:
        with open(out, encoding="utf-8") as f:
            res = json.load(f)
    finally:
        if os.path.exists(out):
            os.unlink(out)
    bad = []
    for e in res["samples"]:
        got = res["kernelbench"][e["name"]]["verdict"]
        if got != e["kernelbench"]:
            bad.append(f"{e['name']}: KernelBench-style verdict {got}, manifest predicts {e['kernelbench']}")
    if sorted(e["name"] for e in res["samples"]) != sorted(SAMPLES):
        bad.append("run.py did not evaluate exactly the samples asked for")
    # The two blind spots the samples document: caught by kevald, passed by KernelBench.
    for n in ("torch_sigmoid_lazy_after_warmup", "torch_relu_inplace_alias"):
        k = res["kernelbench"][n]
        if k["verdict"] != "correct" or "ms" not in k:
            bad.append(f"{n}: expected a timed correct result, got {k}")
    for line in bad:
        print("FAIL:", line)
    print("ok" if not bad else f"{len(bad)} failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
