#!/usr/bin/env python3
"""oracle - check kevald's task references against PyTorch on the GPU host.

Usage (GPU host, from the repository root):
  python3 tools/oracle/oracle.py --dump DIR [--md docs/oracle-table.md]
      DIR from `kevald eval --dump DIR`: DIR/manifest.json lists, per task and
      shape set, the inputs and the reference's outputs as raw little-endian
      files: [{"task", "shape", "params", "buffers": [{"name", "dtype",
      "shape", "role", "file"}]}].
  python3 tools/oracle/oracle.py --standalone [--shapes tiny,small] [--only SUBSTR] [--md FILE]
      Without kevald: draws the inputs with torch from each task's init spec,
      runs the reference plan itself (cupy NVRTC for kernels, torch.matmul with
      TF32 off for cuBLAS steps).

For each (task, shape set) PyTorch computes the outputs from the same inputs
(tools/oracle/torch_ops.py, fp32, TF32 off) and the table shows the max abs and
max rel error of kevald's reference against it and whether it is within the
task's tolerance. Exit status 1 if any row is outside.
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_ops import OPS  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump")
    ap.add_argument("--standalone", action="store_true")
    ap.add_argument("--tasks", default=None, help="task library folder (default: tasks/)")
    ap.add_argument("--shapes", default="tiny,small,default")
    ap.add_argument("--only", default=None, help="only tasks whose name contains this")
    ap.add_argument("--names", default=None,
                    help="only these tasks: exact names, comma-separated, or @FILE")
    ap.add_argument("--category", default=None, help="only tasks of this category (comma list)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--md", default=None, help="write the table as markdown here")
    a = ap.parse_args()
    if not a.dump and not a.standalone:
        ap.error("give --dump DIR or --standalone")
    common.fp32_strict()
    tasks = common.filter_tasks(common.load_tasks(a.tasks), a.category)
    if a.names:
        spec = open(a.names[1:]).read() if a.names.startswith("@") else a.names
        want = {n.strip() for n in spec.replace("\n", ",").split(",") if n.strip()}
        unknown = sorted(want - set(tasks))
        if unknown:
            ap.error("unknown task(s): " + " ".join(unknown))
        tasks = {n: t for n, t in tasks.items() if n in want}
    missing = sorted(n for n in tasks if n not in OPS)
    if missing:
        print("no PyTorch op in torch_ops for %d task(s), skipped: %s" % (len(missing), " ".join(missing)))
        tasks = {n: t for n, t in tasks.items() if n in OPS}
    rows = []
    nbad = 0

    def write_md():
        """Rewrite the table after every row, so a run cut short keeps what it measured."""
        if a.md:
            with open(a.md, "w") as f:
                f.write(common.markdown_table(["task", "shape", "output", "max abs err",
                                               "max rel err", "mismatches", "atol/rtol",
                                               "within tolerance"], rows))

    def check(task, shape, params, ins, ref_outs):
        nonlocal nbad
        want = OPS[task["name"]](ins, params)
        atol, rtol = common.tolerance(task)
        for name, got in ref_outs.items():
            w = want[name]
            if tuple(w.shape) != tuple(got.shape):
                w = w.reshape(got.shape)
            ok, mabs, mrel, mism = common.compare(got, w, atol, rtol)
            nbad += not ok
            row = [task["name"], shape, name, "%.3g" % mabs, "%.3g" % mrel, mism,
                   "%g/%g" % (atol, rtol), "yes" if ok else "**NO**"]
            rows.append(row)
            print(" | ".join(str(x) for x in row), flush=True)
            write_md()

    if a.dump:
        for e, ins, outs in common.load_dump(a.dump, common.DEVICE):
            task = tasks[e["task"]]
            if a.only and a.only not in task["name"]:
                continue
            params = e.get("params") or common.shape_params(task, e["shape"])
            check(task, e["shape"], params, ins, outs)
            del ins, outs
            common.empty_cache()
    else:
        shapes = a.shapes.split(",")
        for name, task in tasks.items():
            if a.only and a.only not in name:
                continue
            for s in task["shapes"]:
                if s["name"] not in shapes:
                    continue
                params = common.shape_params(task, s["name"])
                t0 = time.time()
                try:
                    ins = common.gen_inputs(task, params, a.seed, common.DEVICE)
                    outs = common.run_reference(task, params, ins, common.DEVICE)
                    check(task, s["name"], params, ins, outs)
                except Exception as ex:  # noqa: BLE001
                    nbad += 1
                    rows.append([name, s["name"], "-", "-", "-", "-", "-", "**ERROR** %s" % ex])
                    write_md()
                    print(name, s["name"], "ERROR", ex, flush=True)
                ins = outs = None
                common.empty_cache()
                if time.time() - t0 > 60:
                    print("  (%s %s took %.0f s)" % (name, s["name"], time.time() - t0), flush=True)
    write_md()
    print("\n%d rows, %d outside tolerance" % (len(rows), nbad))
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
