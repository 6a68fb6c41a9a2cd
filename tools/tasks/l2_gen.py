#!/usr/bin/env python3
"""Generate tasks/level2/** (KernelBench level 2: fused GEMM and convolution
sequences) from the definitions in tools/tasks/l2_gemm.py and l2_conv.py.

Usage: python3 tools/tasks/l2_gen.py [category ...]
Writes tasks/level2/<category>/<name>.json and the .cu files beside it, with
the conventions of the level-1 generator (tools/tasks/taskgen.py): provenance
from /work/shared/kernelbench/problems.json (frozen copy in
tools/tasks/l2_kernelbench_times.json), the KernelBench size first, then a
"small" set with sizes that are not multiples of typical block sizes and a
"tiny" one for fast scoring.
"""
import importlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import slower_notes  # noqa: E402
import taskgen  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TASKS_DIR = os.path.join(ROOT, "tasks", "level2")
FROZEN = os.path.join(HERE, "l2_kernelbench_times.json")
MODULES = ["l2_gemm", "l2_conv"]

_PROBLEMS = None
# Marker -> helper definitions (separated by blank lines); make_task2 replaces a
# marker in a source by the helpers that the rest of the source calls.
HELPERS = {}


def used(helpers, code):
    """The helper definitions of `helpers` that `code` calls (or that define macros)."""
    out = []
    parts = []
    for part in helpers.strip("\n").split("\n\n"):
        lines = part.split("\n")
        if all(ln.startswith("__device__") and ln.endswith("}") for ln in lines):
            parts.extend(lines)     # one-line helpers: each on its own
        else:
            parts.append(part)
    for part in parts:
        m = re.search(r"(\w+)\(", part.split("{")[0])
        if m is None or (m.group(1) + "(") in code:
            out.append(part)
    return "\n" + "\n\n".join(out) + "\n"


def problem(num):
    """Level-2 problem `num`: {"problem", "eager", "compile", "params"}."""
    global _PROBLEMS
    if _PROBLEMS is None:
        if os.path.exists(taskgen.PROBLEMS_JSON):
            with open(taskgen.PROBLEMS_JSON) as f:
                probs = json.load(f)
            out = {}
            for p in probs:
                if p["level"] != 2:
                    continue
                n = int(p["problem"].split("_", 1)[0])
                out[n] = {"problem": p["problem"], "eager": p.get("h100_torch_eager_ms"),
                          "compile": p.get("h100_torch_compile_ms"), "params": p.get("params")}
            with open(FROZEN, "w") as f:
                json.dump({str(k): v for k, v in sorted(out.items())}, f, indent=1)
                f.write("\n")
            _PROBLEMS = out
        else:
            with open(FROZEN) as f:
                _PROBLEMS = {int(k): v for k, v in json.load(f).items()}
    return _PROBLEMS[num]


def make_task2(num, category, title, description, params, shapes, buffers, source, plan, *,
               scratch_bufs=None, tolerance=None, tolerance_note=None, flops=None, bytes_=None,
               trials=2, reference_note="", notes=None):
    """Return (category, task dict, {file name: text}) for one level-2 task."""
    for key, text in HELPERS.items():
        if key in source:
            source = source.replace(key, used(text, source.replace(key, "")))
    p = problem(num)
    base = "l2_%d_%s" % (num, taskgen.snake(p["problem"]))
    prov = {"source": "KernelBench", "level": 2, "problem": p["problem"],
            "h100_torch_eager_ms": p["eager"], "h100_torch_compile_ms": p["compile"],
            "reference_note": reference_note}
    if slower_notes.note(base):
        # why the reference stays slower than 1.25x PyTorch (docs/tasks.md, "Yardsticks")
        prov["reference_slower_note"] = slower_notes.note(base)
    ref = {"source_file": base + ".cu", "options": ["-std=c++17"],
           "scratch": scratch_bufs or [], "plan": plan}
    task = {"name": base, "title": title, "description": description, "level": 2,
            "category": category, "provenance": prov, "params": params,
            "shapes": shapes, "buffers": buffers, "reference": ref,
            "tolerance": tolerance or {"atol": 1e-4, "rtol": 1e-4}}
    if notes:
        task["notes"] = notes
    if tolerance_note:
        task["tolerance_note"] = tolerance_note
    if flops:
        task["flops"] = flops
    if bytes_:
        task["bytes"] = bytes_
    task["correctness_trials"] = trials
    return category, task, {base + ".cu": source}


def write_task(category, task, files):
    d = os.path.join(TASKS_DIR, category)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, task["name"] + ".json"), "w") as f:
        f.write(taskgen.dumps(task) + "\n")
    for fname, text in files.items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text.lstrip("\n"))


def main():
    want = set(sys.argv[1:])
    n = 0
    names = set()
    for mod in MODULES:
        if not os.path.exists(os.path.join(HERE, mod + ".py")):
            continue
        m = importlib.import_module(mod)
        for cat, task, files in m.tasks():
            if want and cat not in want:
                continue
            if task["name"] in names:
                raise SystemExit("duplicate task " + task["name"])
            names.add(task["name"])
            write_task(cat, task, files)
            n += 1
    print("wrote %d tasks" % n)


if __name__ == "__main__":
    main()
