#!/usr/bin/env python3
"""test_common - CPU test of the stand-alone reference runner's GEMM steps.

Usage (development machine, PyTorch on the CPU):
  /usr/bin/python3 tools/oracle/test_common.py

common.prepare_reference() binds a task's plan to buffers allocated once, and
timing.py times its run(): a GEMM step must write the product straight into
the task's output (no temporary, no copy), with the plan's transposes taken
as views. This runs every task whose reference plan is GEMM steps only (the
matmul tasks with no kernel step) at its tiny and small shape sets on the
CPU and checks, per task and shape set:
  * the output tensor that prepare_reference() returned holds PyTorch's
    answer (tools/oracle/torch_ops.py) within the task's tolerance, and no
    NaN of the initial fill is left (every element written, in place);
  * its storage did not move (run() wrote into the preallocated buffer);
  * reset() zeroes it again;
  * the same plan with trans_b flipped (square shape sets only) is outside
    tolerance, so the check would see a wrong operand layout.
Exit status 1 on any failure.
"""
import copy
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_ops import OPS  # noqa: E402


def gemm_only(task):
    plan = task["reference"]["plan"]
    return plan and all("library" in st for st in plan)


def main():
    common.fp32_strict()
    tasks = {n: t for n, t in common.load_tasks().items() if gemm_only(t) and n in OPS}
    bad = checked = flipped = 0
    for name, task in tasks.items():
        atol, rtol = common.tolerance(task)
        for shape in ("tiny", "small"):
            params = common.shape_params(task, shape)
            ins = common.gen_inputs(task, params, 1, "cpu")
            outs, run, reset = common.prepare_reference(task, params, ins, "cpu")
            ptrs = {k: v.data_ptr() for k, v in outs.items()}
            run()
            want = OPS[name](ins, params)
            for k, got in outs.items():
                ok, mabs, _, mism = common.compare(got, want[k].reshape(got.shape), atol, rtol)
                nan_left = bool(torch.isnan(got).any())
                moved = got.data_ptr() != ptrs[k]
                checked += 1
                if not ok or nan_left or moved:
                    bad += 1
                    print("FAIL %s %s %s: max abs %.3g, %d mismatches, NaN left %s, moved %s"
                          % (name, shape, k, mabs, mism, nan_left, moved))
            reset()
            if any(bool(t.any()) for t in outs.values()):
                bad += 1
                print("FAIL %s %s: reset() left non-zero outputs" % (name, shape))
            st = task["reference"]["plan"][0]
            if common.ev(st["n"], params) == common.ev(st["k"], params):
                wrong = copy.deepcopy(task)
                wrong["reference"]["plan"][0]["trans_b"] = not st["trans_b"]
                wouts, wrun, _ = common.prepare_reference(wrong, params, ins, "cpu")
                wrun()
                for k, got in wouts.items():
                    ok, _, _, _ = common.compare(got, want[k].reshape(got.shape), atol, rtol)
                    flipped += 1
                    if ok:
                        bad += 1
                        print("FAIL %s %s %s: flipped trans_b still within tolerance" % (name, shape, k))
    print("%d tasks, %d outputs checked, %d flipped-layout checks, %d failures"
          % (len(tasks), checked, flipped, bad))
    sys.exit(1 if bad or not checked or not flipped else 0)


if __name__ == "__main__":
    main()
