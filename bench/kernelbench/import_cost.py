#!/usr/bin/env python3
"""
bench/kernelbench/import_cost.py - what `import torch` costs a fresh kevald-torch worker, and why
(issue 29: a run worker's start is mostly that import, docs/kernelbench.md "Operating it").

Each repeat starts a fresh interpreter (PYTHONDONTWRITEBYTECODE=1, as the workers run: nothing is
written, so the host is left as it was) that imports torch and torch.utils.cpp_extension, and
reports its wall time, and of the modules it loaded from .py files how many had no usable
bytecode cache (no __cached__ file, or one older than its source): those are compiled from
source at every start. The last repeat also runs with -X importtime and prints the slowest
top-level imports. With --prefix, each repeat also imports with sys.pycache_prefix there (as a
kevald-torch worker reads the server's <torch_ext_dir>.pyc), after one import that fills it.

    import_cost.py [--python python3] [--repeat 3] [--prefix DIR] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r'''
import json, os, sys, time
if os.environ.get("KB_PYCACHE"):
    sys.pycache_prefix = os.environ["KB_PYCACHE"]
    sys.dont_write_bytecode = os.environ.get("KB_PYCACHE_WRITE") != "1"
t = time.monotonic()
import torch
import torch.utils.cpp_extension
wall = time.monotonic() - t
py = stale = 0
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None) or ""
    if not isinstance(f, str) or not f.endswith(".py"):
        continue
    py += 1
    c = getattr(m, "__cached__", None)
    try:
        if not isinstance(c, str) or os.stat(c).st_mtime < os.stat(f).st_mtime:
            stale += 1
    except OSError:
        stale += 1
print(json.dumps({"wall_s": wall, "modules": len(sys.modules), "py_modules": py, "no_bytecode": stale,
                  "torch": torch.__version__, "torch_dir": os.path.dirname(torch.__file__)}))
'''


def one(python, importtime=False, prefix=None, write=False):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if prefix:   # sys.pycache_prefix, as a kevald-torch worker sets it; written only by the fill
        env.update(KB_PYCACHE=prefix, KB_PYCACHE_WRITE="1" if write else "0")
    argv = [python] + (["-X", "importtime"] if importtime else []) + ["-c", CHILD]
    t = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    total = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"import_cost: the child failed ({p.returncode}): {p.stderr[-2000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["process_s"] = total
    slow = []
    if importtime:   # "import time: self [us] | cumulative | imported package"
        for line in p.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit():
                name = parts[2].rstrip()
                if name.startswith(" ") and not name.startswith("  "):   # top level: one space of indent
                    slow.append((int(parts[1]) / 1e6, name.strip()))
        slow.sort(reverse=True)
    return out, slow[:12]


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--prefix", help="then the same with bytecode in this folder (sys.pycache_prefix), filled "
                    "first by one import that writes it, as the server's pycache role does; alternated")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    runs, slow = {"installed": [], "prefix": []}, []

    def show(label, i, out):
        print(f"{label} run {i + 1}: import {out['wall_s']:.2f} s, process {out['process_s']:.2f} s, "
              f"{out['py_modules']} .py modules, {out['no_bytecode']} without bytecode (torch {out['torch']})")

    if a.prefix:
        os.makedirs(a.prefix, exist_ok=True)
        out, _ = one(a.python, prefix=a.prefix, write=True)
        print(f"fill: import {out['wall_s']:.2f} s writing bytecode to {a.prefix}")
    for i in range(a.repeat):
        out, sl = one(a.python, importtime=(i == a.repeat - 1))
        slow = sl or slow
        runs["installed"].append(out)
        show("installed", i, out)
        if a.prefix:
            out, _ = one(a.python, prefix=a.prefix)
            runs["prefix"].append(out)
            show("prefix   ", i, out)
    for s, name in slow:
        print(f"  {s:7.3f} s  {name}")
    if a.prefix:
        import statistics
        x = statistics.median(r["wall_s"] for r in runs["installed"])
        y = statistics.median(r["wall_s"] for r in runs["prefix"])
        print(f"median import: {x:.2f} s as installed, {y:.2f} s with the prefix's bytecode ({x / y:.2f}x)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "slowest": slow}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
