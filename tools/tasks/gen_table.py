#!/usr/bin/env python3
"""gen_table - build the tables of docs/tasks.md from the task library.

Usage: python3 tools/tasks/gen_table.py [--doc docs/tasks.md]
           [--oracle FILE.md] [--degeneracy FILE.md] [--timing FILE.md]
           [--oracle-cpu FILE.md] [--degeneracy-cpu FILE.md]

Replaces the text between <!-- BEGIN name --> and <!-- END name --> markers in
the doc: `tasks` (always: one row per task with category, shape sets, the
published KernelBench H100 eager time and the reference note), `counts` (tasks
per category), and `oracle`, `degeneracy`, `timing` with the markdown files
that tools/oracle/{oracle,degeneracy,timing}.py --md wrote on the GPU host.
"""
import argparse
import collections
import glob
import json
import os
import re

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def shape_str(s):
    return "%s: %s" % (s["name"], " ".join("%s=%s" % (k, v) for k, v in s.items() if k != "name"))


def tasks_table(tasks):
    rows = ["| task | category | shape sets | H100 eager ms (KernelBench) | reference |",
            "|---|---|---|---|---|"]
    for t in tasks:
        prov = t.get("provenance", {})
        shapes = "<br>".join(shape_str(s) for s in t["shapes"])
        eager = prov.get("h100_torch_eager_ms")
        rows.append("| `%s` | %s | %s | %s | %s |" % (
            t["name"], t["category"], shapes, "-" if eager is None else eager,
            prov.get("reference_note", "").replace("|", "/")))
    return "\n".join(rows) + "\n"


def counts_table(tasks):
    c = collections.Counter(t["category"] for t in tasks)
    rows = ["| category | tasks | KernelBench problems |", "|---|---|---|"]
    for cat in sorted(c):
        nums = sorted(int(t["name"].split("_")[1]) for t in tasks if t["category"] == cat)
        rows.append("| %s | %d | %s |" % (cat, c[cat], ", ".join(map(str, nums))))
    rows.append("| **total** | **%d** | |" % len(tasks))
    return "\n".join(rows) + "\n"


def replace(doc, name, text):
    pat = re.compile(r"(<!-- BEGIN %s -->\n).*?(<!-- END %s -->)" % (name, name), re.S)
    if not pat.search(doc):
        raise SystemExit("marker %s missing in the doc" % name)
    return pat.sub(lambda m: m.group(1) + text + m.group(2), doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "tasks.md"))
    ap.add_argument("--tasks", default=os.path.join(ROOT, "tasks"))
    ap.add_argument("--oracle")
    ap.add_argument("--degeneracy")
    ap.add_argument("--timing")
    ap.add_argument("--oracle-cpu", dest="oracle_cpu")
    ap.add_argument("--degeneracy-cpu", dest="degeneracy_cpu")
    a = ap.parse_args()
    tasks = []
    for p in glob.glob(os.path.join(a.tasks, "**", "*.json"), recursive=True):
        with open(p) as f:
            tasks.append(json.load(f))
    tasks.sort(key=lambda t: (t.get("level", 0), int(t["name"].split("_")[1]) if t["name"].split("_")[1].isdigit() else 0))
    with open(a.doc) as f:
        doc = f.read()
    doc = replace(doc, "tasks", tasks_table(tasks))
    doc = replace(doc, "counts", counts_table(tasks))
    for name in ("oracle", "degeneracy", "timing", "oracle-cpu", "degeneracy-cpu"):
        path = getattr(a, name.replace("-", "_"))
        if path:
            with open(path) as f:
                doc = replace(doc, name, f.read())
    with open(a.doc, "w") as f:
        f.write(doc)
    print("%s: %d tasks" % (a.doc, len(tasks)))


if __name__ == "__main__":
    main()
