#!/usr/bin/env python3
"""timing - PyTorch eager time of every task at its default size (GPU host).

Usage (from the repository root):
  python3 tools/oracle/timing.py [--shape default] [--only SUBSTR[,SUBSTR...]]
      [--category CAT[,CAT...]] [--ref] [--trials 20] [--md FILE]

For each task: draws the inputs (torch, from the task's init spec), then times
the PyTorch computation (tools/oracle/torch_ops.py, fp32, TF32 off) with CUDA
events: 3 warm-ups, then --trials timed runs, each after an L2 flush (a 256 MiB
write); prints the median in ms next to KernelBench's published H100 eager
time.

With --ref it also times the task's reference plan run stand-alone (not
through kevald), set up the way kevald's worker (worker/gpu/judge_timing.c, timed_run)
runs it: outputs and scratch allocated once before timing and zeroed between
trials outside the timed region (kevald wipes them after each reference run),
then flush, event, the plan's steps, event. Kernels are launched by cupy from
the reference compiled by NVRTC (the same kernels kevald times, cupy's launch
path instead of the driver API's); a cuBLAS step is the same row-major GEMM
call kevald makes (worker/gpu/blas.c: operands' transposes as flags, written
straight into the output), issued as torch.addmm_/baddbmm_ with TF32 off. The
timed region holds no allocation, fill, copy or extra elementwise pass.
(The first stand-alone run, 2026-11-21, timed more: the NaN fill of every
output and, per GEMM step, matmul into a temporary, `alpha * r + 0` and a copy
into C; docs/tasks.md, "Timing at the default size", says what that added.)
Note: KernelBench's published times were taken with PyTorch 2.5 defaults
(TF32 allowed for cuDNN convolutions), so fp32 convolutions measure slower here.
"""
import argparse
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_ops import OPS  # noqa: E402


def time_fn(fn, trials, prep=None):
    """Median ms of @fn over @trials runs; @prep (if any) runs before each
    run and before the L2 flush, outside the timed region."""
    if common.DEVICE == "cpu":   # development mode: wall clock, no L2 flush
        import time
        ts = []
        for _ in range(trials):
            if prep:
                prep()
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(ts)
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    for _ in range(3):
        if prep:
            prep()
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(trials):
        if prep:
            prep()
        flush.fill_(1.0)
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default=None)
    ap.add_argument("--shape", default="default")
    ap.add_argument("--only", default=None,
                    help="only tasks whose name contains one of these (comma list)")
    ap.add_argument("--category", default=None, help="only tasks of this category (comma list)")
    ap.add_argument("--names", default=None,
                    help="only these tasks: exact names, comma-separated, or @FILE")
    ap.add_argument("--cublas-only", action="store_true",
                    help="only tasks whose reference plan has a cuBLAS (library) step: those "
                         "bench/tasks/selfeval.py cannot time through kevald")
    ap.add_argument("--ref", action="store_true")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    common.fp32_strict()
    tasks = common.filter_tasks(common.load_tasks(a.tasks), a.category)
    if a.names:
        spec = open(a.names[1:]).read() if a.names.startswith("@") else a.names
        want = {n.strip() for n in spec.replace("\n", ",").split(",") if n.strip()}
        tasks = {n: t for n, t in tasks.items() if n in want}
    if a.cublas_only:
        tasks = {n: t for n, t in tasks.items()
                 if any("library" in st for st in t["reference"]["plan"])}
    missing = sorted(n for n in tasks if n not in OPS)
    if missing:
        print("no PyTorch op in torch_ops for %d task(s), skipped: %s" % (len(missing), " ".join(missing)))
        tasks = {n: t for n, t in tasks.items() if n in OPS}
    rows = []
    for name, task in tasks.items():
        if a.only and not any(x in name for x in a.only.split(",")):
            continue
        params = common.shape_params(task, a.shape)
        pub = task.get("provenance", {}).get("h100_torch_eager_ms")
        try:
            ins = common.gen_inputs(task, params, 1, common.DEVICE)
            t_torch = time_fn(lambda: OPS[name](ins, params), a.trials)
            t_ref = None
            if a.ref and common.DEVICE == "cpu":   # the CPU shim runs the plan as one program
                t_ref = time_fn(lambda: common.run_reference(task, params, ins, common.DEVICE), a.trials)
            elif a.ref:
                outs, run, reset = common.prepare_reference(task, params, ins, common.DEVICE,
                                                            fill_outputs=False)
                t_ref = time_fn(run, a.trials, prep=reset)
                del outs, run, reset   # free the reference buffers before the next task
            row = [name, a.shape, pub if pub is not None else "-", "%.3f" % t_torch,
                   "%.3f" % t_ref if t_ref else "-",
                   "%.2f" % (t_ref / t_torch) if t_ref else "-"]
        except Exception as ex:  # noqa: BLE001
            row = [name, a.shape, pub, "ERROR %s" % str(ex)[:80], "-", "-"]
        rows.append(row)
        print(" | ".join(str(x) for x in row), flush=True)
        ins = None
        common.empty_cache()
    md = common.markdown_table(["task", "shape", "published H100 eager ms", "torch eager ms here",
                                "reference ms (stand-alone)", "reference / torch"], rows)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
