#!/usr/bin/env python3
"""
rollout.py - score one RL rollout with kevald.

An RL step samples many candidate kernels from a policy; here a generator
stands in for the policy and writes 256 candidates across the elementwise
activation tasks of the library (l1_19_relu, l1_20_leakyrelu, l1_21_sigmoid,
...): correct ones (a grid-stride loop; a float4-vectorized one), slow ones
(too few threads), wrong ones (an off-by-one bound; a wrong formula) and
broken ones (a compile error; a plan that passes the length as i32 where the
kernel takes 64 bits: rejected; an out-of-bounds write: a runtime error on a
GPU). Each formula is read from the task's reference source on the server,
so every candidate fits its task's plan (x, y, n = B * D as u64).

The rollout goes in with submit_batch (server-sized batches, one
Idempotency-Key each), is waited for with wait_all (long polls; progress on
stderr), and each result becomes a reward (kevald.reward, Kevin-32B form).
It prints the verdicts and mean reward per variant, the throughput, and
checks each verdict against the variant's expectation for the mode (exit 1
on any surprise).

    python3 rollout.py --server http://127.0.0.1:8080 --mode compile
    python3 rollout.py --server http://GPUHOST:8080 --mode full --timing fast

Needs only the kevald package (clients/python on PYTHONPATH, or installed).
"""
import argparse
import asyncio
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import kevald  # noqa: E402
from kevald import reward as rw  # noqa: E402

DEFAULT_TASKS = ["l1_19_relu", "l1_20_leakyrelu", "l1_21_sigmoid", "l1_22_tanh", "l1_25_swish",
                 "l1_28_hardsigmoid", "l1_30_softsign", "l1_32_hardtanh"]

U64_N = {"type": "u64", "value": "B * D"}

GRID_STRIDE = r'''// rollout candidate: {variant}
extern "C" __global__ void cand(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             {cond}; i += stride) {{
                float v = x[i];
                y[i{offset}] = {expr};
        }}
}}
'''

VEC4 = r'''// rollout candidate: {variant}
extern "C" __global__ void cand(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)
{{
        unsigned long long n4 = n / 4, stride = (unsigned long long)gridDim.x * blockDim.x;
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        for (unsigned long long i = t; i < n4; i += stride) {{
                float4 a = reinterpret_cast<const float4*>(x)[i], b;
                {{ float v = a.x; b.x = {expr}; }}
                {{ float v = a.y; b.y = {expr}; }}
                {{ float v = a.z; b.z = {expr}; }}
                {{ float v = a.w; b.w = {expr}; }}
                reinterpret_cast<float4*>(y)[i] = b;
        }}
        for (unsigned long long i = n4 * 4 + t; i < n; i += stride) {{
                float v = x[i];
                y[i] = {expr};
        }}
}}
'''

# variant -> (expected verdict in full mode, in compile mode)
EXPECT = {
    "correct": ("correct", "compiled"),
    "vec4": ("correct", "compiled"),
    "slow": ("correct", "compiled"),
    "off_by_one": ("incorrect", "compiled"),
    "wrong_formula": ("incorrect", "compiled"),
    "compile_error": ("compile_error", "compile_error"),
    "rejected": ("rejected", "rejected"),
    "oob_write": ("runtime_error", "compiled"),
}
VARIANTS = list(EXPECT)


def formula(task_doc):
    """The expression of `v` the reference writes to y[i]: its one-line `act(float v)` (the
    library's elementwise activations), or the older `float v = x[i]; y[i] = ...;` form."""
    src = task_doc["reference"]["source"]
    m = (re.search(r"float act\(float v\)\s*\{\s*return ([^;{}]+);\s*\}", src)
         or re.search(r"float v = x\[i\];\s*y\[i\] = (.+?);\s*\n", src))
    return m.group(1).strip() if m else None


def candidate(task, expr, variant, k):
    """(source, plan) of one candidate; @k varies the launch configuration."""
    block = (128, 256, 512)[k % 3]
    grid = [f"min(ceil_div(B * D, {block}), 1048576)"]
    args = ["x", "y", U64_N]
    fields = dict(variant=variant, expr=expr, cond="i < n", offset="")
    if variant == "vec4":
        src = VEC4.format(**fields)
        grid = [f"min(ceil_div(B * D, {4 * block}), 1048576)"]
    else:
        if variant == "slow":
            grid, block = [132], 128               # 16896 threads for up to 1.6e9 elements
        elif variant == "off_by_one":
            fields["cond"] = "i + 1 < n"           # the last element is never written
        elif variant == "wrong_formula":
            fields["expr"] = f"1.01f * ({expr}) + 0.01f"
        elif variant == "compile_error":
            fields["expr"] = f"({expr}) + rollout_undeclared"   # an undeclared identifier
        elif variant == "rejected":
            args = ["x", "y", {"type": "i32", "value": "B * D"}]   # the kernel takes 8 bytes
        elif variant == "oob_write":
            fields["offset"] = " + (1ull << 36)"   # 256 GiB past the buffer
        src = GRID_STRIDE.format(**fields)
    plan = [{"kernel": "cand", "grid": grid, "block": [block], "shared": "0", "args": args}]
    return src, plan


def build_rollout(client, tasks, count, mode, timing, run_id, shapes=None):
    exprs, task_shapes = {}, {}
    for t in tasks:
        doc = client.task(t)
        e = formula(doc)
        if shapes:
            # Score on the task's small shape sets only (fast RL rewards).
            task_shapes[t] = [s["name"] for s in doc.get("shapes", []) if s["name"] in shapes] or None
        if e is None:
            print(f"rollout: skipping {t}: its reference has no one-line `act(float v)`", file=sys.stderr)
            continue
        exprs[t] = e
    if not exprs:
        raise SystemExit("rollout: no usable task")
    names = sorted(exprs)
    subs, meta = [], []
    for k in range(count):
        variant = VARIANTS[k % len(VARIANTS)]            # every variant in every 8 samples
        task = names[(k // len(VARIANTS)) % len(names)]
        src, plan = candidate(task, exprs[task], variant, k)
        sub = {"task": task, "source": src, "plan": plan, "mode": mode, "options": ["-std=c++17"],
               "tags": {"run_id": run_id, "step": 0, "sample": k, "labels": {"variant": variant}}}
        if timing and mode == "full":
            sub["timing"] = timing
        if task_shapes.get(task):
            sub["shapes"] = task_shapes[task]
        subs.append(sub)
        meta.append((task, variant))
    return subs, meta


def score(results, meta, mode, cfg):
    by_variant = defaultdict(list)
    surprises = Counter()
    verdicts = Counter()
    for sub, (task, variant) in zip(results, meta):
        v = sub.verdict if sub.done else f"pending:{sub.state}"
        verdicts[v] += 1
        want = EXPECT[variant][0 if mode == "full" else 1]
        if v != want:
            surprises[(variant, want, v)] += 1
        by_variant[variant].append((v, rw.reward(sub, cfg), sub.result.speedup if sub.result else None))
    return by_variant, verdicts, surprises


def report(by_variant, verdicts, surprises, n, t_submit, t_total, mode):
    print(f"\n{'variant':<15} {'n':>4}  {'mean reward':>11}  {'median speedup':>14}  verdicts")
    for variant in VARIANTS:
        rows = by_variant.get(variant, [])
        if not rows:
            continue
        rs = [r for _, r, _ in rows if r is not None]
        sp = sorted(s for _, _, s in rows if s is not None)
        mean = f"{sum(rs) / len(rs):.3f}" if rs else "-"
        med = f"{sp[len(sp) // 2]:.3f}x" if sp else "-"
        vs = ", ".join(f"{k}={c}" for k, c in sorted(Counter(v for v, _, _ in rows).items()))
        print(f"{variant:<15} {len(rows):>4}  {mean:>11}  {med:>14}  {vs}")
    print(f"\nverdicts: {dict(sorted(verdicts.items()))}")
    print(f"submitted {n} candidates in {t_submit:.2f} s ({n / max(t_submit, 1e-9):.0f}/s); "
          f"all scored in {t_total:.2f} s: throughput {n / max(t_total, 1e-9):.1f} submissions/s ({mode} mode)")
    if surprises:
        print("unexpected verdicts:")
        for (variant, want, got), c in sorted(surprises.items()):
            print(f"  {variant}: expected {want}, got {got} ({c}x)")
    else:
        print("every verdict as expected for its variant")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=os.environ.get("KEVALD_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--token", default=os.environ.get("KEVALD_TOKEN"))
    ap.add_argument("--mode", choices=["compile", "full"], default="compile")
    ap.add_argument("--count", type=int, default=256, help="candidates in the rollout (default 256)")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated task names")
    ap.add_argument("--shapes", default=None,
                    help="comma-separated shape set names to score on (e.g. small,tiny); default: all")
    ap.add_argument("--timing", choices=["fast", "precise"], default="fast",
                    help="timing preset in full mode (default fast)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the whole rollout")
    ap.add_argument("--batch-size", type=int, default=None, help="submissions per POST (default: server limit)")
    ap.add_argument("--async", dest="use_async", action="store_true", help="use kevald.AsyncClient")
    ap.add_argument("--penalty", action="append", default=[], metavar="VERDICT=R",
                    help="reward for a failing verdict, e.g. compile_error=-0.5 (default 0)")
    ap.add_argument("--run-id", default=None)
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    if not 1 <= a.count <= 100000:
        ap.error("--count must be 1..100000")
    pen = {}
    for p in a.penalty:
        k, _, v = p.partition("=")
        pen[k] = float(v)
    cfg = rw.RewardConfig(penalties={**rw.RewardConfig().penalties, **pen})
    run_id = a.run_id or f"rollout-{int(time.time())}-{os.getpid()}"
    tasks = [t for t in a.tasks.split(",") if t]

    with kevald.Client(a.server, token=a.token) as c:
        subs, meta = build_rollout(c, tasks, a.count, a.mode, a.timing, run_id,
                                   a.shapes.split(",") if a.shapes else None)
        print(f"rollout {run_id}: {len(subs)} candidates over {len(set(t for t, _ in meta))} tasks, "
              f"{len(VARIANTS)} variants, mode {a.mode}, server {a.server}")
        t0 = time.monotonic()
        if a.use_async:
            async def go():
                async with kevald.AsyncClient(a.server, token=a.token) as ac:
                    ids = await ac.submit_batch(subs, batch_size=a.batch_size)
                    t1 = time.monotonic()
                    return ids, t1, await ac.wait_all(ids, timeout=a.timeout, progress=not a.no_progress)
            ids, t1, results = asyncio.run(go())
        else:
            ids = c.submit_batch(subs, batch_size=a.batch_size)
            t1 = time.monotonic()
            results = c.wait_all(ids, timeout=a.timeout, progress=not a.no_progress)
        t2 = time.monotonic()
    by_variant, verdicts, surprises = score(results, meta, a.mode, cfg)
    report(by_variant, verdicts, surprises, len(ids), t1 - t0, t2 - t0, a.mode)
    print(f"ids {ids[0]}..{ids[-1]}; history: kevald history --run-id {run_id}")
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
