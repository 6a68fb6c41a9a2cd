#!/usr/bin/python3
"""Check the generated corpus on a machine without a GPU: run every kernel
meant to be correct, incorrect or a runtime error on the CPU shim of
tools/tasks/cpu_check.py (blocks one after another, a block's threads as
pthreads) for the task's small shape sets, and compare the outputs with that
tool's independent numpy implementation of the task, under the task's
tolerance.

Expected: `correct` kernels match on every shape set checked; `incorrect`
ones mismatch on at least one; `runtime_error` ones crash the process (the
far out-of-bounds read faults, __trap aborts). Timeouts, compile errors and
plan mismatches are not run here (run.py --mode compile checks the last two
against NVRTC and the plan check).

Usage: /usr/bin/python3 bench/throughput/cpu_check_corpus.py CORPUS [--shapes tiny,small] [--jobs N]
Needs numpy and g++ (a development check, not part of the GPU-host run).
"""
import argparse
import concurrent.futures as cf
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
import cpu_check  # noqa: E402

# What the shim lacks and the corpus uses.
EXTRAS = r'''
#ifndef THROUGHPUT_SHIM_EXTRAS
#define THROUGHPUT_SHIM_EXTRAS
struct float4 { float x, y, z, w; };
static inline float rsqrtf(float v) { return 1.0f / sqrtf(v); }
#define __trap() abort()
static float g_shfl[1024];
static pthread_barrier_t g_warp_barrier[32];
static struct WarpBarrierInit {
        WarpBarrierInit() { for (int i = 0; i < 32; i++) pthread_barrier_init(&g_warp_barrier[i], NULL, 32); }
} g_warp_barrier_init;
/* All 32 lanes of a warp call it (true of the corpus's kernels). */
static inline float __shfl_xor_sync(unsigned mask, float v, int o)
{
        (void)mask;
        unsigned t = threadIdx.x;
        g_shfl[t] = v;
        pthread_barrier_wait(&g_warp_barrier[t >> 5]);
        float r = g_shfl[t ^ (unsigned)o];
        pthread_barrier_wait(&g_warp_barrier[t >> 5]);
        return r;
}
#endif
'''


def task_path(name):
    for dirpath, _, files in os.walk(os.path.join(ROOT, "tasks")):
        if name + ".json" in files:
            return os.path.join(dirpath, name + ".json")
    raise KeyError(name)


def check(item, shapes):
    path = task_path(item["task"])
    task = json.load(open(path))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "cand.cu")
        with open(src, "w") as fh:
            fh.write(EXTRAS + item["submission"]["source"])
        task["example"] = {"source_file": src, "plan": item["submission"]["plan"],
                           "scratch": item["submission"].get("scratch", [])}
        for s in task["shapes"]:
            if s["name"] not in shapes:
                continue
            try:
                res = cpu_check.run_one(path, task, s, tmp, example=True)
            except Exception as e:  # noqa: BLE001
                res = "ERROR %r" % (e,)
            out.append((s["name"], res))
    if any("compile failed" in r or "ERROR" in r for _, r in out):
        outcome = "harness_error"
    elif any("run failed" in r for _, r in out):
        outcome = "runtime_error"
    elif any("MISMATCH" in r for _, r in out):
        outcome = "incorrect"
    else:
        outcome = "correct"
    return outcome, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--shapes", default="tiny,small")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="only items whose task contains this")
    ap.add_argument("--category", help="only this category (correct, incorrect, runtime_error)")
    ap.add_argument("--family", help="only this family (elementwise, dimreduce, rowwise, loss)")
    a = ap.parse_args()
    corpus = json.load(open(a.corpus))
    items = [it for it in corpus["items"] if it["category"] in ("correct", "incorrect", "runtime_error")
             and (not a.only or a.only in it["task"])
             and (not a.category or a.category == it["category"])
             and (not a.family or a.family == it["family"])]
    shapes = a.shapes.split(",")
    bad = 0
    tally = {}
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futs = {pool.submit(check, it, shapes): it for it in items}
        for f in cf.as_completed(futs):
            it = futs[f]
            outcome, res = f.result()
            ok = outcome == it["category"]
            bad += not ok
            key = (it["category"], outcome)
            tally[key] = tally.get(key, 0) + 1
            print("%s #%d %-40s %-13s %-15s -> %s%s" % (
                "ok  " if ok else "FAIL", it["id"], it["task"], it["category"], it["variant"], outcome,
                "" if ok else "  " + " | ".join("%s: %s" % (s, r[:300]) for s, r in res)), flush=True)
    print("\nexpected -> observed on the CPU shim:")
    for (e, o), n in sorted(tally.items()):
        print("  %-14s -> %-14s %d" % (e, o, n))
    print("checked %d, unexpected %d" % (len(items), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
