#!/usr/bin/env python3
"""Generate tasks/level1/** from the definitions in tools/tasks/l1_*.py.

Usage: python3 tools/tasks/gen_level1.py [category ...]
Writes tasks/level1/<category>/<name>.json and the .cu files beside it.
"""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taskgen  # noqa: E402

MODULES = ["l1_activation", "l1_softmax", "l1_reduction", "l1_argreduce", "l1_norm",
           "l1_pooling", "l1_scan", "l1_loss", "l1_matmul", "l1_conv"]


def main():
    want = set(sys.argv[1:])
    n = 0
    names = set()
    for mod in MODULES:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), mod + ".py")
        if not os.path.exists(path):
            continue
        m = importlib.import_module(mod)
        for cat, task, files in m.tasks():
            if want and cat not in want:
                continue
            if task["name"] in names:
                raise SystemExit("duplicate task " + task["name"])
            names.add(task["name"])
            taskgen.write_task(cat, task, files)
            n += 1
    print("wrote %d tasks" % n)


if __name__ == "__main__":
    main()
