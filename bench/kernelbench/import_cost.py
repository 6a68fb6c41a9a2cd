#!/usr/bin/env python3
"""
bench/kernelbench/import_cost.py - what `import torch` costs a fresh kevald-torch worker, and why
(issue 29: a run worker's start is mostly that import, docs/kernelbench.md "Operating it").

Each repeat starts a fresh interpreter (PYTHONDONTWRITEBYTECODE=1, as the workers run: nothing is
written, so the host is left as it was) that imports torch and torch.utils.cpp_extension, and
reports its wall time, and of the modules it loaded from .py files how many had no usable
bytecode cache (no __cached__ file, or one older than its source): those are compiled from
source at every start. The last repeat also runs with -X importtime and prints the slowest
top-level imports.

    import_cost.py [--python python3] [--repeat 3] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r'''
import json, os, sys, time
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


def one(python, importtime=False):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
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
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    runs = []
    for i in range(a.repeat):
        out, slow = one(a.python, importtime=(i == a.repeat - 1))
        runs.append(out)
        print(f"run {i + 1}: import {out['wall_s']:.2f} s, process {out['process_s']:.2f} s, "
              f"{out['py_modules']} .py modules, {out['no_bytecode']} without bytecode (torch {out['torch']})")
    for s, name in slow:
        print(f"  {s:7.3f} s  {name}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "slowest": slow}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
