#!/usr/bin/env python3
"""dump_check - the oracle (and degeneracy filter) through kevald itself (GPU host).

Usage (from the repository root, kevald built, GPU present):
  python3 tools/oracle/dump_check.py [--kevald build/server/kevald] [--shapes tiny,small]
        [--only SUBSTR] [--degeneracy] [--md FILE] [--keep DIR]

For each task: writes a copy of the task with its reference source inlined and
only the chosen shape sets (dumping a default can take 20 GB of disk), runs
`kevald eval --task COPY --dump DIR` (kevald's GPU worker draws the inputs
from the seed and runs the reference: driver API, cuBLAS), checks every
output against PyTorch (tools/oracle/torch_ops.py) under the task's
tolerance, and removes the dump. With --degeneracy it dumps a second time
with another seed and runs the checks of degeneracy.py on the pair.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import degeneracy  # noqa: E402
from torch_ops import OPS  # noqa: E402


def dump(kevald, task, shapes, d, seed):
    t = {k: v for k, v in task.items() if not k.startswith("_")}
    t["shapes"] = [s for s in task["shapes"] if s["name"] in shapes]
    ref = dict(t["reference"])
    with open(os.path.join(task["_dir"], ref.pop("source_file"))) as f:
        ref["source"] = f.read()
    t["reference"] = ref
    t.pop("example", None)
    tf = os.path.join(d, task["name"] + ".json")   # kevald wants file name == task name
    with open(tf, "w") as f:
        json.dump(t, f)
    out = os.path.join(d, "dump-%s" % seed)
    r = subprocess.run([kevald, "eval", "--task", tf, "--dump", out, "--seed", seed, "--timing", "fast"],
                       capture_output=True, text=True, timeout=1800)
    if not os.path.exists(os.path.join(out, "manifest.json")):
        raise RuntimeError("kevald eval --dump failed (rc %d): %s" % (r.returncode, (r.stderr or r.stdout)[-800:]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kevald", default="build/server/kevald")
    ap.add_argument("--shapes", default="tiny,small")
    ap.add_argument("--only", default=None, help="only tasks whose name contains this")
    ap.add_argument("--category", default=None, help="only tasks of this category (comma list)")
    ap.add_argument("--degeneracy", action="store_true")
    ap.add_argument("--md", default=None)
    ap.add_argument("--keep", default=None, help="keep the dumps under this folder")
    a = ap.parse_args()
    common.fp32_strict()
    tasks = common.filter_tasks(common.load_tasks(), a.category)
    missing = sorted(n for n in tasks if n not in OPS)
    if missing:
        print("no PyTorch op in torch_ops for %d task(s), skipped: %s" % (len(missing), " ".join(missing)))
        tasks = {n: t for n, t in tasks.items() if n in OPS}
    shapes = a.shapes.split(",")
    rows, drows = [], []
    nbad = 0
    import torch
    gen = torch.Generator()
    gen.manual_seed(7)
    for name, task in tasks.items():
        if a.only and a.only not in name:
            continue
        d = tempfile.mkdtemp(prefix="kevald-oracle-", dir=a.keep)
        try:
            d1 = dump(a.kevald, task, shapes, d, "00000000000000a1")
            second = {}
            if a.degeneracy:
                d2 = dump(a.kevald, task, shapes, d, "00000000000000b2")
                for e, _, outs in common.load_dump(d2, common.DEVICE):
                    second[e["shape"]] = outs
            for e, ins, outs in common.load_dump(d1, common.DEVICE):
                params = e["params"]
                want = OPS[name](ins, params)
                atol, rtol = common.tolerance(task)
                for bn, got in outs.items():
                    ok, mabs, mrel, mism = common.compare(got, want[bn].reshape(got.shape), atol, rtol)
                    nbad += not ok
                    rows.append([name, e["shape"], bn, "%.3g" % mabs, "%.3g" % mrel, mism,
                                 "%g/%g" % (atol, rtol), "yes" if ok else "**NO**"])
                    print(" | ".join(str(x) for x in rows[-1]), flush=True)
                if a.degeneracy:
                    res = degeneracy.checks(task, params, ins, outs, second.get(e["shape"]), gen)
                    cells = ["fails" if res.get(c, True) else "PASSES" for c in ("zeros", "const", "copy", "seeds")]
                    bad_in = [k[6:] for k in res if k.startswith("input:") and not res[k]]
                    cells.insert(3, "fails" if not bad_in else "PASSES (%s)" % ",".join(bad_in))
                    nbad += sum(c != "fails" for c in cells)
                    drows.append([name, e["shape"]] + cells)
                    print("  degeneracy: " + " | ".join(cells), flush=True)
        except Exception as ex:  # noqa: BLE001
            nbad += 1
            rows.append([name, "-", "-", "-", "-", "-", "-", "**ERROR** %s" % str(ex)[:200]])
            print(name, "ERROR", ex, flush=True)
        finally:
            if not a.keep:
                shutil.rmtree(d, ignore_errors=True)
            common.empty_cache()
    md = common.markdown_table(["task", "shape", "output", "max abs err", "max rel err", "mismatches",
                                "atol/rtol", "within tolerance"], rows)
    if drows:
        md += "\n" + common.markdown_table(["task", "shape", "zeros", "const", "copy", "inputs", "seeds"], drows)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    print("\n%d rows, %d problems" % (len(rows), nbad))
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
