#!/usr/bin/env python3
"""crosscheck - an independent check of a baseline file's torch eager figures
with torch.utils.benchmark (issue 25: for 10 tasks, the file's eager time
within 5 % of torch.utils.benchmark with an L2 flush). GPU host: python3,
torch 2.x.

Usage (from the repository root):
  python3 tools/baselines/crosscheck.py --baselines tasks/baselines/nvidia-h100-80gb-hbm3.json
      [--tasks NAME,NAME,...] [--tolerance 0.05] [--min-run-s 1.0] [--md FILE] [--json FILE]

Method, per task at its default shape set (the file's entry must have the
task's default params, or the task is reported as stale):
  * the expression is the one baselines.py times (tools/oracle/torch_ops*.py,
    fp32, TF32 off) on inputs drawn from the task's init specs;
  * "fresh inputs as far as the API allows": torch.utils.benchmark.Timer runs
    one statement many times and cannot generate inputs between runs outside
    the timed region, so K input sets are drawn beforehand (K = 2..8, as many
    as fit in --pool-gib) and the statement takes the next one each run: no
    two consecutive runs read the same buffers or values;
  * the statement is `flush(); fn(next_set())`, the flush a read of twice the
    L2 (as kevald's worker and baselines.py do), so every run starts from a
    cold L2; a second Timer measures `flush(); next_set()` alone, and the
    task's time is the difference of the two medians
    (Timer.blocked_autorange(min_run_time=--min-run-s), whose timer
    synchronizes the GPU at each block's ends);
  * the file's figure is a median of CUDA-event trials after the same flush
    (tools/baselines/baselines.py); the two must agree within --tolerance
    (relative to the file's figure).
Prints one table row per task; exit status 0 when every task agrees, 1 when
any differs by more than the tolerance or has no usable entry, 2 on usage
errors.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# Ten tasks of different kinds (GEMM, elementwise, row softmax, norms,
# pooling, reductions, scans, losses, a fused GEMM): none a convolution,
# whose cuDNN algorithm choice can differ between two processes.
DEFAULT_TASKS = ["l1_1_square_matrix_multiplication", "l1_19_relu", "l1_23_softmax",
                 "l1_36_rmsnorm", "l1_40_layernorm", "l1_42_max_pooling_2d",
                 "l1_47_sum_reduction_over_a_dimension", "l1_89_cumsum",
                 "l1_95_crossentropyloss", "l2_12_gemm_multiply_leakyrelu"]
TOLERANCE = 0.05
POOL_MIN, POOL_MAX = 2, 8


def pool_size(set_bytes, pool_bytes):
    """Input sets to draw: as many as fit in @pool_bytes, within [2, 8] (two
    at least, so consecutive runs never share buffers)."""
    if set_bytes <= 0:
        return POOL_MAX
    return max(POOL_MIN, min(POOL_MAX, pool_bytes // set_bytes))


def default_params(task):
    s = task["shapes"][0]
    return s["name"], {k: v for k, v in s.items() if k != "name"}


def file_entry(doc, task):
    """(eager_ms, why): the baseline file's eager figure for @task's default
    shape set, or None and why not."""
    shape, params = default_params(task)
    e = (doc.get("tasks", {}).get(task["name"]) or {}).get(shape)
    if not e:
        return None, "no entry in the file"
    if e.get("params") != params:
        return None, "stale entry (params %s, the task's %s)" % (e.get("params"), params)
    if not isinstance(e.get("eager_ms"), (int, float)):
        return None, "eager failed in the file: %s" % e.get("eager_error", "null")
    return float(e["eager_ms"]), None


def net_ms(with_flush_s, flush_only_s):
    """The task's time (ms) from the two medians (s): with and without it."""
    return (with_flush_s - flush_only_s) * 1e3


def compare(bench_ms, file_ms, tol=TOLERANCE):
    """(relative difference to the file's figure, within tolerance?)."""
    if bench_ms is None or file_ms is None or file_ms <= 0:
        return None, False
    d = (bench_ms - file_ms) / file_ms
    return d, abs(d) <= tol


def row(name, file_ms, bench_ms, flush_ms, tol, why=None):
    d, ok = compare(bench_ms, file_ms, tol)
    return {"task": name, "file_eager_ms": file_ms, "benchmark_ms": bench_ms, "flush_ms": flush_ms,
            "diff": d, "ok": ok and why is None, "why": why}


def table(rows, tol=TOLERANCE):
    def f(v, spec):
        return "-" if v is None else spec % v
    out = ["| task | baseline file eager ms | torch.utils.benchmark ms | flush ms | difference | "
           "within %.0f %% |" % (tol * 100), "|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            r["task"], f(r["file_eager_ms"], "%.4g"), f(r["benchmark_ms"], "%.4g"),
            f(r["flush_ms"], "%.3g"), f(None if r["diff"] is None else 100 * r["diff"], "%+.1f %%"),
            "yes" if r["ok"] else "**NO**" + (" (%s)" % r["why"] if r["why"] else "")))
    n_ok = sum(r["ok"] for r in rows)
    out.append("")
    out.append("%d of %d tasks within %.0f %% of the baseline file's torch eager figure." % (
        n_ok, len(rows), tol * 100))
    return "\n".join(out) + "\n"


def load_tasks(names, library):
    sys.path.insert(0, HERE)
    import protocol
    import glob
    found = {}
    for p in glob.glob(os.path.join(library, "**", "*.json"), recursive=True):
        if not protocol.is_task_file(library, p):
            continue
        with open(p) as f:
            t = json.load(f)
        if t.get("name") in names:
            found[t["name"]] = t
    return found


def measure(torch, benchmark, common, fn, task, params, pool_bytes, min_run_s, flush_buf):
    """(task ms, flush ms) by torch.utils.benchmark, as the module doc says."""
    first = common.gen_inputs(task, params, 1)
    set_bytes = sum(t.numel() * t.element_size() for t in first.values())
    k = pool_size(set_bytes, pool_bytes)
    pool = [first] + [common.gen_inputs(task, params, 1 + i) for i in range(1, k)]
    state = {"i": 0}

    def next_set():
        state["i"] = (state["i"] + 1) % len(pool)
        return pool[state["i"]]

    def flush():
        flush_buf.sum()

    g = {"flush": flush, "fn": fn, "next_set": next_set}
    fn(next_set())                      # warm-up: kernels loaded, allocator primed
    torch.cuda.synchronize()
    both = benchmark.Timer(stmt="flush(); fn(next_set())", globals=g).blocked_autorange(
        min_run_time=min_run_s)
    alone = benchmark.Timer(stmt="flush(); next_set()", globals=g).blocked_autorange(
        min_run_time=min_run_s)
    return net_ms(both.median, alone.median), alone.median * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baselines", required=True, help="the baseline file to check")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma list of task names")
    ap.add_argument("--library", default=os.path.join(ROOT, "tasks"))
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    ap.add_argument("--min-run-s", type=float, default=1.0)
    ap.add_argument("--pool-gib", type=float, default=24.0, help="memory for the input sets")
    ap.add_argument("--md", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    names = [n.strip() for n in a.tasks.split(",") if n.strip()]
    with open(a.baselines) as f:
        doc = json.load(f)
    tasks = load_tasks(set(names), a.library)
    unknown = [n for n in names if n not in tasks]
    if unknown:
        ap.error("not in the library: " + " ".join(unknown))

    import torch
    import torch.utils.benchmark as benchmark
    sys.path.insert(0, os.path.join(ROOT, "tools", "oracle"))
    import common
    from torch_ops import OPS
    common.fp32_strict()
    gpu = torch.cuda.get_device_name(0)
    if doc.get("gpu") != gpu:
        print("crosscheck: warning: the file is for %r, this GPU is %r" % (doc.get("gpu"), gpu))
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
    flush_buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda").fill_(1.0)
    rows = []
    for name in names:
        task = tasks[name]
        file_ms, why = file_entry(doc, task)
        bench_ms = flush_ms = None
        if name not in OPS:
            why = why or "no PyTorch expression in tools/oracle/torch_ops*.py"
        else:
            _, params = default_params(task)
            try:
                def fn(ins, name=name, params=params):
                    return OPS[name](ins, params)
                bench_ms, flush_ms = measure(torch, benchmark, common, fn, task, params,
                                             int(a.pool_gib * (1 << 30)), a.min_run_s, flush_buf)
            except Exception as ex:  # noqa: BLE001 - reported in the row
                why = "%s: %s" % (type(ex).__name__, str(ex).splitlines()[0][:200])
            common.empty_cache()
        r = row(name, file_ms, bench_ms, flush_ms, a.tolerance, why)
        rows.append(r)
        print("%s: file %s ms, benchmark %s ms%s" % (
            name, file_ms, None if bench_ms is None else round(bench_ms, 4),
            "" if r["ok"] else "  ** %s" % (why or "differs")), flush=True)
    text = table(rows, a.tolerance)
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gpu": gpu, "baselines": a.baselines, "torch": torch.__version__,
                       "tolerance": a.tolerance, "rows": rows}, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
