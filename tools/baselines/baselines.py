#!/usr/bin/env python3
"""baselines - time every task's PyTorch expression, eager and under
torch.compile, with kevald's protocol, into the task library's baseline file
for this GPU model (GPU host: python3, torch 2.x, triton; no network).

Usage (from the repository root, on the GPU host):
  python3 tools/baselines/baselines.py [--tasks GLOB[,GLOB...]] [--shapes NAME[,NAME...]]
      [--budget-s S] [--eager-only] [--compile-shapes NAME[,NAME...]] [--resume FILE]
      [--out DIR] [--library DIR]
      [--shape-budget-ms MS] [--precision P] [--compile-mode MODE]

Writes DIR/<gpu slug>.json (DIR: --out, else $OUT, else tasks/baselines)
after every measurement, so a run cut short leaves what it measured. The
format is common/baselines.c's (docs/tasks.md, "Baselines"): the date, the
torch, CUDA, driver, triton and Python versions, the GPU's name, the
protocol, and per task per shape set {params, eager_ms, compile_ms} with
null and eager_error/compile_error where a mode failed, was not run, or did
not fit in --budget-s.

The expression is the task's PyTorch computation from tools/oracle/torch_ops*.py
(fp32, TF32 off: a candidate must meet fp32 tolerances, so its baseline does),
on inputs drawn from the task's init specs (tools/oracle/common.py). The
protocol is kevald's (tools/baselines/protocol.py says it in full): fresh
inputs for every timed execution, generated before a reading L2 flush of
twice the L2; warm-up executions, then trials of L executions between two
CUDA events (L for a ~1 ms trial), the median of trial / L, stopping at the
target precision of the median's 95 % interval, max_trials or the budget
per shape set (kevald's defaults: 2000 ms, 1 %, 6..1000 trials). torch.compile
runs once untimed first (compilation), then the same protocol. Eager runs
first for every entry, then torch.compile, so a tight --budget-s still gives
every eager figure. Exit status: 0, or 1 when the CUDA context was lost (the
file then says which entries were not run and why).
"""
import argparse
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "oracle"))
import protocol  # noqa: E402

EAGER_EXTRA_S = 1.0        # input generation and set-up beyond the shape set's timing budget
COMPILE_FIRST_GUESS_S = 60.0


def load_library(root):
    tasks = {}
    for p in sorted(glob.glob(os.path.join(root, "**", "*.json"), recursive=True)):
        if not protocol.is_task_file(root, p):
            continue
        with open(p) as f:
            t = json.load(f)
        t["_dir"] = os.path.dirname(p)
        tasks[t["name"]] = t
    return tasks


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except Exception:  # noqa: BLE001 - the file says null
        return None


def versions(torch):
    try:
        import triton
        tv = triton.__version__
    except Exception:  # noqa: BLE001
        tv = None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "driver": driver_version(), "triton": tv,
            "python": platform.python_version()}


def write_atomic(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


class Timer:
    """kevald's protocol around one callable fn(inputs) on one shape set."""

    def __init__(self, torch, common, policy):
        self.torch = torch
        self.common = common
        self.policy = policy
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
        self.flush_buf = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda").fill_(1.0)
        self.seed = 0

    def flush(self):
        """A reading flush: every line it leaves is clean (worker/gpu/devmem.c kv_l2_flush)."""
        self.flush_buf.sum()

    def fresh(self, task, params):
        self.seed += 1
        return self.common.gen_inputs(task, params, self.seed)

    def trial(self, fn, sets):
        torch = self.torch
        self.flush()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for ins in sets:
            fn(ins)
        e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) / len(sets)

    def time(self, fn, task, params):
        pol = self.policy
        first = self.fresh(task, params)
        set_bytes = sum(t.numel() * t.element_size() for t in first.values())
        warm = [self.trial(fn, [first])]
        first = None   # one input set in memory at a time (default shape sets reach GiBs)
        warm += [self.trial(fn, [self.fresh(task, params)]) for _ in range(max(pol["warmup"] - 1, 0))]
        per = protocol.launches_per_trial(statistics.median(warm), set_bytes, pol["target_precision"])
        samples, t0, stop = [], time.monotonic(), None
        while stop is None:
            sets = [self.fresh(task, params) for _ in range(per)]   # generated before the flush
            samples.append(self.trial(fn, sets))
            st = protocol.stats(samples)
            stop = protocol.should_stop(pol, len(samples), (time.monotonic() - t0) * 1e3, st["precision"])
            sets = None
        st.update(stop=stop, launches_per_trial=per)
        return st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=None, help="only tasks matching these shell globs (comma list)")
    ap.add_argument("--shapes", default=None, help="only these shape sets (comma list; default: all)")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="wall-time budget of the run; what does not fit is skipped and the file says so")
    ap.add_argument("--eager-only", action="store_true", help="no torch.compile")
    ap.add_argument("--compile-shapes", default=None,
                    help="torch.compile only these shape sets (comma list; default: those of --shapes)")
    ap.add_argument("--resume", default=None, help="an earlier file of this GPU model: keep its figures")
    ap.add_argument("--out", default=None, help="output folder (default $OUT, else the library's baselines/)")
    ap.add_argument("--library", default=os.path.join(ROOT, "tasks"))
    ap.add_argument("--shape-budget-ms", type=float, default=protocol.POLICY["budget_ms"])
    ap.add_argument("--precision", type=float, default=protocol.POLICY["target_precision"])
    ap.add_argument("--compile-mode", default="default", help="torch.compile mode")
    a = ap.parse_args()

    import torch
    import common
    from torch_ops import OPS
    common.fp32_strict()
    policy = dict(protocol.POLICY, budget_ms=a.shape_budget_ms, target_precision=a.precision)
    gpu = torch.cuda.get_device_name(0)
    doc = protocol.new_doc(gpu, versions(torch), policy)
    doc["protocol"]["compile_mode"] = a.compile_mode
    if a.resume and os.path.exists(a.resume):
        with open(a.resume) as f:
            doc["tasks"] = protocol.resume(json.load(f), gpu)
    out_dir = a.out or os.environ.get("OUT") or os.path.join(a.library, "baselines")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, protocol.slug(gpu) + ".json")
    budget = protocol.Budget(a.budget_s, time.monotonic)
    tasks = load_library(a.library)
    want_shapes = set(s for s in (a.shapes or "").split(",") if s)
    entries = []
    for name in protocol.select_tasks(tasks, a.tasks):
        for s in tasks[name]["shapes"]:
            if not want_shapes or s["name"] in want_shapes:
                entries.append((name, s["name"], {k: v for k, v in s.items() if k != "name"}))
    print("baselines: %s, torch %s, CUDA %s, driver %s: %d entries -> %s" %
          (gpu, doc["torch"], doc["cuda"], doc["driver"], len(entries), out), flush=True)
    timer = Timer(torch, common, policy)
    lost = None
    compile_s = []
    modes = ["eager"] if a.eager_only else ["eager", "compile"]
    compile_shapes = set(s for s in (a.compile_shapes or "").split(",") if s)
    for mode in modes:
        for name, shape, params in entries:
            task = tasks[name]
            if protocol.measured(doc, name, shape, mode, params):
                continue
            why = None
            if mode == "compile" and compile_shapes and shape not in compile_shapes:
                why = "not run: --compile-shapes %s" % a.compile_shapes
            elif lost:
                why = "not run: the CUDA context was lost earlier (%s)" % lost
            elif name not in OPS:
                why = "no PyTorch expression for this task in tools/oracle/torch_ops*.py"
            else:
                est = a.shape_budget_ms / 1e3 + EAGER_EXTRA_S
                if mode == "compile":
                    est += 1.5 * max(compile_s) if compile_s else COMPILE_FIRST_GUESS_S
                if not budget.fits(est):
                    why = "not run: did not fit in --budget-s %g (%.0f s left, ~%.0f s needed)" % (
                        a.budget_s, max(budget.left(), 0.0), est)
            if why:
                protocol.set_result(doc, name, shape, params, mode, None, why)
                write_atomic(out, doc)
                print("%s %s %s: %s" % (name, shape, mode, why), flush=True)
                continue
            try:
                def fn(ins, name=name, params=params):
                    return OPS[name](ins, params)
                if mode == "compile":
                    torch._dynamo.reset()
                    fn = torch.compile(fn, mode=a.compile_mode, dynamic=False)
                    t0 = time.monotonic()
                    fn(timer.fresh(task, params))   # compilation, untimed
                    torch.cuda.synchronize()
                    compile_s.append(time.monotonic() - t0)
                st = timer.time(fn, task, params)
                protocol.set_result(doc, name, shape, params, mode, st["median_ms"], detail=st)
                print("%s %s %s: %.4f ms (%d trials x %d, %s)" % (name, shape, mode, st["median_ms"],
                      st["trials"], st["launches_per_trial"], st["stop"]), flush=True)
            except Exception as ex:  # noqa: BLE001 - a failed entry is recorded, the run goes on
                msg = ("%s: %s" % (type(ex).__name__, ex)).strip().splitlines()[0][:300]
                protocol.set_result(doc, name, shape, params, mode, None, msg)
                print("%s %s %s: FAILED %s" % (name, shape, mode, msg), flush=True)
                try:
                    torch.cuda.synchronize()
                except Exception as ex2:  # noqa: BLE001 - a sticky error: nothing more can run
                    lost = "%s %s %s: %s" % (name, shape, mode, str(ex2).splitlines()[0][:200])
            finally:
                if not lost:
                    common.empty_cache()
            write_atomic(out, doc)
    write_atomic(out, doc)
    print("baselines: %s: %s" % (out, json.dumps(protocol.summary(doc))), flush=True)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
