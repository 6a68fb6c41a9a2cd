#!/usr/bin/python3
"""test_index - tasks/kernelbench/index.json's structure, without torch.

Checks (validate() below) that the index has one entry per problem of
tools/kernelbench/problems.json (the frozen copy of
/work/shared/kernelbench/problems.json), that names are unique and follow the
rule (the C task's name where tasks/level<L> has one, else
l<level>_<num>_<snake(problem)>), that every module file exists and defines the
constants, Model, get_inputs and get_init_inputs, that every shape set
(default, small, tiny) gives every constant, that default is problems.json's
constants exactly, that tolerances are the C task's, and that the committed
files are what tools/kernelbench/gen.py writes. Then that validate() rejects
broken copies of the index, so it is not vacuous.
"""
import ast
import copy
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("KEVALD_SOURCE_ROOT") or os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
sys.path.insert(0, HERE)
from gen import evaluate  # noqa: E402
from taskgen import snake  # noqa: E402

KB = os.path.join(ROOT, "tasks", "kernelbench")
SHAPES = ["default", "small", "tiny"]


def c_task(level, name):
    hits = glob.glob(os.path.join(ROOT, "tasks", "level%d" % level, "**", name + ".json"), recursive=True)
    return json.load(open(hits[0])) if hits else None


def module_facts(path):
    """(module-level assigned names, top-level def/class names) of a module, by parsing it."""
    tree = ast.parse(open(path).read(), path)
    names, defs = set(), set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defs.add(node.name)
    return names, defs


def is_const(v):
    if isinstance(v, list):
        return all(is_const(e) for e in v)
    return isinstance(v, (int, float, bool))


def validate(index, problems):
    errs = []
    if index.get("version") != 1:
        errs.append("version is not 1")
    tasks = index.get("tasks", [])
    byproblem = {(p["level"], p["problem"]): p for p in problems}
    seen_names, seen_problems = set(), set()
    for t in tasks:
        where = t.get("name", "?")
        key = (t.get("level"), t.get("problem"))
        p = byproblem.get(key)
        if p is None:
            errs.append("%s: %s is not a problem of problems.json" % (where, key))
            continue
        if key in seen_problems:
            errs.append("%s: problem %s twice" % (where, key))
        seen_problems.add(key)
        if t["name"] in seen_names:
            errs.append("%s: name used twice" % where)
        seen_names.add(t["name"])
        num = int(p["problem"].split("_")[0])
        rule = "l%d_%d_%s" % (p["level"], num, snake(p["problem"]))
        ct = c_task(p["level"], rule)
        if ct:
            if t.get("c_task") != ct["name"] or t["name"] != ct["name"]:
                errs.append("%s: C task %s exists: name and c_task must be it" % (where, ct["name"]))
            elif t.get("tolerance") != ct["tolerance"]:
                errs.append("%s: tolerance %s is not the C task's %s" % (where, t.get("tolerance"), ct["tolerance"]))
        else:
            if t.get("c_task") is not None or t["name"] != rule:
                errs.append("%s: no C task: name must be %s and c_task null" % (where, rule))
        tol = t.get("tolerance", {})
        if sorted(tol) != ["atol", "rtol"] or not all(isinstance(v, (int, float)) and v >= 0 for v in tol.values()):
            errs.append("%s: tolerance must be {atol, rtol} >= 0" % where)
        for k in ("h100_torch_eager_ms", "h100_torch_compile_ms"):
            if t.get(k) != p.get(k):
                errs.append("%s: %s %s != problems.json %s" % (where, k, t.get(k), p.get(k)))
        if t.get("module") != "level%d/%s.py" % (p["level"], t["name"]):
            errs.append("%s: module must be level%d/%s.py" % (where, p["level"], t["name"]))
            continue
        path = os.path.join(KB, t["module"])
        if not os.path.isfile(path):
            errs.append("%s: %s does not exist" % (where, t["module"]))
            continue
        names, defs = module_facts(path)
        for d in ("Model", "get_inputs", "get_init_inputs"):
            if d not in defs:
                errs.append("%s: module defines no %s" % (where, d))
        shapes = t.get("shapes", [])
        if [s.get("name") for s in shapes] != SHAPES:
            errs.append("%s: shape sets must be %s" % (where, SHAPES))
            continue
        default = shapes[0]["constants"]
        want = evaluate(p["params"])
        for k, v in want.items():
            if default.get(k, "missing") != v:
                errs.append("%s: default %s = %r, problems.json says %r" % (where, k, default.get(k, "missing"), v))
        for s in shapes:
            c = s.get("constants", {})
            if set(c) != set(default):
                errs.append("%s: shape set %s does not give the same constants as default (%s)" % (
                    where, s["name"], sorted(set(c) ^ set(default))))
            bad = [k for k, v in c.items() if not is_const(v)]
            if bad:
                errs.append("%s: %s: non-numeric constants %s" % (where, s["name"], bad))
        missing = set(default) - names
        if missing:
            errs.append("%s: module does not define constants %s" % (where, sorted(missing)))
    for key in set(byproblem) - seen_problems:
        errs.append("problem %s has no task" % (key,))
    return errs


def main():
    problems = json.load(open(os.path.join(HERE, "problems.json")))
    shared = "/work/shared/kernelbench/problems.json"
    if os.path.exists(shared) and json.load(open(shared)) != problems:
        print("FAIL tools/kernelbench/problems.json differs from %s" % shared)
        return 1
    index = json.load(open(os.path.join(KB, "index.json")))
    fails = 0
    errs = validate(index, problems)
    for e in errs:
        print("FAIL", e)
    fails += bool(errs)
    n = len(index["tasks"])
    nc = sum(1 for t in index["tasks"] if t["c_task"])
    print("%s index: %d tasks (%d problems), %d with a C task, %d errors" % (
        "ok  " if not errs else "FAIL", n, len(problems), nc, len(errs)))
    if n != 200 or len(problems) != 200:
        print("FAIL expected 200 tasks")
        fails += 1
    r = subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "--check"], capture_output=True, text=True)
    print("%s gen.py --check: %s" % ("ok  " if r.returncode == 0 else "FAIL", r.stdout.strip().splitlines()[-1:]))
    if r.returncode:
        print(r.stdout + r.stderr)
        fails += 1
    # validate() is not vacuous: each of these broken copies must be rejected.
    def broken(fn):
        b = copy.deepcopy(index)
        fn(b["tasks"])
        return b

    cases = {
        "duplicate name": lambda ts: ts[1].update(name=ts[0]["name"]),
        "missing task": lambda ts: ts.pop(),
        "wrong default": lambda ts: ts[0]["shapes"][0]["constants"].update(N=4095),
        "tiny lacks a constant": lambda ts: ts[20]["shapes"][2]["constants"].pop("dim"),
        "no module": lambda ts: ts[5].update(module="level1/nope.py"),
        "C task not named": lambda ts: ts[0].update(c_task=None),
        "tolerance not the C task's": lambda ts: ts[0].update(tolerance={"atol": 1, "rtol": 1}),
        "name off the rule": lambda ts: ts[196].update(name=ts[196]["name"] + "_x",
                                                       module="level2/%s_x.py" % ts[196]["name"]),
    }
    for what, fn in cases.items():
        e = validate(broken(fn), problems)
        print("%s rejects %s (%d errors)" % ("ok  " if e else "FAIL", what, len(e)))
        fails += not e
    print("failures:", fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
