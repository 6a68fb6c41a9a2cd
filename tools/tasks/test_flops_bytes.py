#!/usr/bin/env python3
"""test_flops_bytes - every task of the library states flops and bytes, so every
result on a GPU with known peaks has a roofline and a roofline_fraction
(worker/gpu/judge_timing.c roofline_min_ms(), server/dispatch/pipeline.c).

Usage: python3 tools/tasks/test_flops_bytes.py [TASKS_DIR]   (also `meson test task-flops-bytes`)

Per task file (not baselines/, not *.plan.json) and per shape set: `flops`
and `bytes` are present, evaluate (kevald's integer expressions) to
flops >= 0 and bytes > 0, and bytes is at least the size of the output
buffers (every output element is written once: a smaller figure would put
the roofline bound below what any kernel must move). Exit status 1 on any
failure, naming the task and shape set.
"""
import json
import math
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from yardstick import ev  # noqa: E402  (kevald's expressions, one evaluator for the task tools)
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)

DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "u8": 1, "i8": 1}


def check_task(t):
    errs = []
    for key in ("flops", "bytes"):
        if key not in t:
            errs.append("no %s" % key)
    if errs:
        return errs
    for s in t["shapes"]:
        params = {k: v for k, v in s.items() if k != "name"}
        flops, nbytes = ev(t["flops"], params), ev(t["bytes"], params)
        out = sum(math.prod(ev(d, params) for d in b["shape"]) * DTYPE_BYTES[b["dtype"]]
                  for b in t["buffers"] if b["role"] != "in")
        if flops < 0:
            errs.append("shape set %s: flops %d < 0" % (s["name"], flops))
        if nbytes <= 0 or nbytes < out:
            errs.append("shape set %s: bytes %d, less than the outputs' %d" % (s["name"], nbytes, out))
    return errs


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tasks")
    n = bad = 0
    for p in task_paths(root):
        with open(p) as f:
            t = json.load(f)
        n += 1
        for e in check_task(t):
            bad += 1
            print("FAIL %s: %s" % (t.get("name", p), e))
    # the checker itself: a task without them, or with too few bytes, fails
    probe = {"shapes": [{"name": "default", "N": 8}],
             "buffers": [{"name": "y", "dtype": "f32", "shape": ["N"], "role": "out"}]}
    assert check_task(probe) == ["no flops", "no bytes"]
    assert check_task(dict(probe, flops="N", bytes="4 * N")) == []
    assert check_task(dict(probe, flops="N", bytes="2 * N")) != []
    print("%d tasks, %d failure(s)" % (n, bad))
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
