#!/usr/bin/env python3
"""degeneracy - check that trivial candidates FAIL every task (GPU host).

Usage (from the repository root):
  python3 tools/oracle/degeneracy.py --standalone [--shapes tiny,small] [--only SUBSTR] [--md FILE]
  python3 tools/oracle/degeneracy.py --dump DIR --dump2 DIR2 [--md FILE]
      (two `kevald eval --dump` runs with different seeds)

For every task and shape set, with the reference output R (kevald's, from the
dump, or the reference plan run stand-alone):
  zeros     an all-zero output must fail the task's tolerance against R;
  const     a constant (1.0, and the mean of R for non-scalar outputs) must fail;
  copy      the first input, flattened and cut or repeated to R's size, must fail;
  input:X   for each input X, changing one element (up to 8 random positions,
            +-1e6 * max(1, |x|); integers: another valid value; masks: flipped)
            and recomputing with PyTorch must fail against R for at least one
            try (X influences the output);
  seeds     R for seed 1 and R for seed 2 must differ beyond the tolerance.
A cell reads "fails" when the degenerate candidate is rejected (good) and
"PASSES" when it would be accepted (a task problem). Exit status 1 if any PASSES.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_ops import OPS  # noqa: E402


def fails(got, want, atol, rtol):
    """True when a candidate writing `got` would be judged incorrect."""
    if want.is_floating_point():
        got = got.to(want.dtype)    # what a candidate could store
    ok, _, _, _ = common.compare(got, want, atol, rtol)
    return not ok


def perturb_check(task, params, ins, ref, atol, rtol, gen):
    res = {}
    for b in task["buffers"]:
        if b["role"] == "out":
            continue
        x = ins[b["name"]]
        n = x.numel()
        hit = False
        # up to 64 random elements: a strided or dilated operation leaves most inputs unread
        # (l1_86 small reads a quarter of x; 8 tries all missed it once, p = 0.75^8 = 0.1)
        for _ in range(64):
            idx = int(torch.randint(0, n, (1,), generator=gen).item())
            trials = []
            v = x.reshape(-1)[idx].item()
            if b["dtype"] in ("u8", "i8", "i32", "i64"):
                init = b.get("init", {})
                if init.get("dist") == "int":
                    lo, hi = common.ev(init["low"], params), common.ev(init["high"], params)
                    trials = [lo + (int(v) - lo + 1) % (hi - lo)] if hi - lo > 1 else []
                else:
                    trials = [int(v) ^ 1]
            else:
                d = 1e6 * max(1.0, abs(v))
                trials = [v + d, v - d]
            for nv in trials:
                y = {k: t.clone() if k == b["name"] else t for k, t in ins.items()}
                y[b["name"]].reshape(-1)[idx] = nv
                out = OPS[task["name"]](y, params)
                if any(fails(out[k].reshape(r.shape), r, atol, rtol) for k, r in ref.items()):
                    hit = True
                    break
            if hit:
                break
        res["input:" + b["name"]] = hit
    return res


def checks(task, params, ins, ref, ref2, gen):
    atol, rtol = common.tolerance(task)
    res = {}
    first_in = [b["name"] for b in task["buffers"] if b["role"] != "out"][0]
    for name, r in ref.items():
        res["zeros"] = res.get("zeros", True) and fails(torch.zeros_like(r), r, atol, rtol)
        consts = [1.0]
        if r.numel() > 1 and r.is_floating_point():
            consts.append(float(r.double().mean().item()))
        res["const"] = all(fails(torch.full_like(r, c, dtype=torch.float64), r, atol, rtol) for c in consts)
        src = ins[first_in].reshape(-1).to(torch.float64)
        reps = -(-r.numel() // max(src.numel(), 1))
        cp = src.repeat(reps)[:r.numel()].reshape(r.shape)
        res["copy"] = fails(cp, r, atol, rtol)
        if ref2 is not None:
            res["seeds"] = res.get("seeds", True) and fails(ref2[name], r, atol, rtol)
    res.update(perturb_check(task, params, ins, ref, atol, rtol, gen))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump")
    ap.add_argument("--dump2")
    ap.add_argument("--standalone", action="store_true")
    ap.add_argument("--tasks", default=None)
    ap.add_argument("--shapes", default="tiny,small")
    ap.add_argument("--only", default=None, help="only tasks whose name contains this")
    ap.add_argument("--category", default=None, help="only tasks of this category (comma list)")
    ap.add_argument("--md", default=None)
    a = ap.parse_args()
    if not a.dump and not a.standalone:
        ap.error("give --dump DIR [--dump2 DIR2] or --standalone")
    common.fp32_strict()
    tasks = common.filter_tasks(common.load_tasks(a.tasks), a.category)
    missing = sorted(n for n in tasks if n not in OPS)
    if missing:
        print("no PyTorch op in torch_ops for %d task(s), skipped: %s" % (len(missing), " ".join(missing)))
        tasks = {n: t for n, t in tasks.items() if n in OPS}
    gen = torch.Generator()
    gen.manual_seed(7)
    rows = []
    nbad = 0
    cols = ["zeros", "const", "copy", "inputs", "seeds"]

    def report(task, shape, res):
        nonlocal nbad
        inputs = [k for k in res if k.startswith("input:")]
        bad_inputs = [k[6:] for k in inputs if not res[k]]
        cells = []
        for c in cols:
            if c == "inputs":
                v = not bad_inputs
                cells.append("fails" if v else "PASSES (%s)" % ",".join(bad_inputs))
            elif c in res:
                v = res[c]
                cells.append("fails" if v else "PASSES")
            else:
                v = True
                cells.append("-")
            nbad += not v
        rows.append([task, shape] + cells)
        print(" | ".join(rows[-1]), flush=True)

    if a.dump:
        second = {}
        if a.dump2:
            for e, ins, outs in common.load_dump(a.dump2, device="cpu"):
                second[(e["task"], e["shape"])] = outs
        for e, ins, outs in common.load_dump(a.dump, common.DEVICE):
            task = tasks[e["task"]]
            if a.only and a.only not in task["name"]:
                continue
            params = e.get("params") or common.shape_params(task, e["shape"])
            r2 = second.get((e["task"], e["shape"]))
            if r2 is not None:
                r2 = {k: v.to(common.DEVICE) for k, v in r2.items()}
            report(task["name"], e["shape"], checks(task, params, ins, outs, r2, gen))
    else:
        for name, task in tasks.items():
            if a.only and a.only not in name:
                continue
            for s in task["shapes"]:
                if s["name"] not in a.shapes.split(","):
                    continue
                params = common.shape_params(task, s["name"])
                try:
                    ins = common.gen_inputs(task, params, 1, common.DEVICE)
                    ref = common.run_reference(task, params, ins, common.DEVICE)
                    ref2 = common.run_reference(task, params, common.gen_inputs(task, params, 2, common.DEVICE), common.DEVICE)
                    report(name, s["name"], checks(task, params, ins, ref, ref2, gen))
                except Exception as ex:  # noqa: BLE001
                    nbad += 1
                    rows.append([name, s["name"], "**ERROR** %s" % ex, "", "", "", ""])
                    print(name, s["name"], "ERROR", ex, flush=True)
                common.empty_cache()
    md = common.markdown_table(["task", "shape"] + cols, rows)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print("\n%d rows, %d degenerate candidates accepted" % (len(rows), nbad))
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
