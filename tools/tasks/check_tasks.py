#!/usr/bin/env python3
"""check_tasks - a quick, independent sanity check of the task library.

Usage: python3 tools/tasks/check_tasks.py [--nvcc] [--only SUBSTR] [tasks/]

For every task JSON: required fields; every shape set gives a value to every
param; every expression (buffer shapes, grids, blocks, shared, scalar args,
int init bounds, flops, bytes) evaluates; buffer bytes of each shape set stay
under 20 GiB (both copies and guard bands must fit an 80 GB GPU); grid and
block dimensions are within CUDA limits; each launched kernel is an
`extern "C" __global__` function of the reference source and gets as many
arguments as it declares; `provenance.reference_slower_note` (why a reference
stays slower than 1.25x PyTorch, docs/tasks.md "Yardsticks"), when present, is
a string of at least 20 characters.  With --nvcc every reference and example source is
compiled to a CUBIN for sm_90a (nvcc stands in for NVRTC here; neither source
includes any header).  `kevald task check` is the authoritative validator.
"""
import json
import os
import re
import subprocess
import sys
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i8": 1, "u8": 1, "i32": 4, "i64": 8}
MAX_BYTES = 20 << 30
SLOWER_NOTE_MIN = 20    # characters: a reason, not a placeholder
NVCC = "/usr/local/cuda/bin/nvcc"


def ev(expr, params):
    if isinstance(expr, int):
        return expr
    if not isinstance(expr, str) or not re.fullmatch(r"[A-Za-z0-9_+\-*/%(), ]+", expr):
        raise ValueError("bad expression %r" % (expr,))
    e = expr.replace("/", "//")

    def ceil_div(a, b):
        return -(-a // b)
    env = dict(params)
    env.update({"ceil_div": ceil_div, "min": min, "max": max, "__builtins__": {}})
    v = eval(e, env)  # noqa: S307 - our own files, charset checked above
    if not isinstance(v, int):
        raise ValueError("non-integer %r" % expr)
    return v


def kernel_sigs(src):
    sigs = {}
    for m in re.finditer(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?'
                         r'(\w+)\s*\(([^)]*)\)', src):
        args = [a for a in m.group(2).split(",") if a.strip()]
        sigs[m.group(1)] = len(args)
    return sigs


def check_plan(where, plan, sigs, params, names, errs):
    for i, st in enumerate(plan):
        if "library" in st:
            for k in ("a", "b", "c"):
                if st[k] not in names:
                    errs.append("%s plan[%d]: unknown buffer %s" % (where, i, st[k]))
            for k in ("m", "n", "k", "batch"):
                if ev(st[k], params) <= 0:
                    errs.append("%s plan[%d]: %s <= 0" % (where, i, k))
            continue
        k = st["kernel"]
        if k not in sigs:
            errs.append("%s plan[%d]: kernel %s not in source" % (where, i, k))
        elif sigs[k] != len(st["args"]):
            errs.append("%s plan[%d]: %s takes %d args, plan gives %d"
                        % (where, i, k, sigs[k], len(st["args"])))
        g = [ev(x, params) for x in st["grid"]]
        b = [ev(x, params) for x in st["block"]]
        if not (1 <= g[0] < 2 ** 31) or any(not (1 <= x <= 65535) for x in g[1:]):
            errs.append("%s plan[%d]: grid %s out of range" % (where, i, g))
        prod = 1
        for x in b:
            prod *= x
        if prod > 1024 or prod < 1:
            errs.append("%s plan[%d]: block %s" % (where, i, b))
        ev(st.get("shared", "0"), params)
        for a in st["args"]:
            if isinstance(a, str):
                if a not in names:
                    errs.append("%s plan[%d]: unknown buffer %s" % (where, i, a))
            elif a["type"] in ("i32", "u32", "i64", "u64"):
                v = ev(a["value"], params)
                lim = {"i32": (-2 ** 31, 2 ** 31), "u32": (0, 2 ** 32),
                       "i64": (-2 ** 63, 2 ** 63), "u64": (0, 2 ** 64)}[a["type"]]
                if not (lim[0] <= v < lim[1]):
                    errs.append("%s plan[%d]: %s value %d overflows" % (where, i, a["type"], v))


def check_slower_note(prov):
    """Errors for provenance.reference_slower_note: absent is fine; present, a
    string of at least SLOWER_NOTE_MIN characters that says why."""
    note = prov.get("reference_slower_note")
    if note is None:
        return []
    if not isinstance(note, str) or len(note.strip()) < SLOWER_NOTE_MIN:
        return ["provenance.reference_slower_note: a string of at least %d characters saying "
                "why the reference is slower than 1.25x PyTorch" % SLOWER_NOTE_MIN]
    return []


def check(path, nvcc, report):
    errs = []
    t = json.load(open(path))
    d = os.path.dirname(path)
    for k in ("name", "title", "description", "level", "category", "provenance", "params",
              "shapes", "buffers", "reference", "tolerance"):
        if k not in t:
            errs.append("missing " + k)
    if os.path.basename(path) != t["name"] + ".json":
        errs.append("file name does not match task name")
    errs += check_slower_note(t.get("provenance") or {})
    src = open(os.path.join(d, t["reference"]["source_file"])).read()
    sigs = kernel_sigs(src)
    ex_sigs = {}
    if "example" in t:
        ex_sigs = kernel_sigs(open(os.path.join(d, t["example"]["source_file"])).read())
    for s in t["shapes"]:
        params = {k: v for k, v in s.items() if k != "name"}
        if set(params) != set(t["params"]):
            errs.append("shape %s: params %s != %s" % (s["name"], sorted(params), sorted(t["params"])))
            continue
        total = 0
        names = set()
        for b in t["buffers"]:
            n = 1
            for e in b["shape"]:
                v = ev(e, params)
                if v <= 0:
                    errs.append("shape %s: buffer %s dim %s = %d" % (s["name"], b["name"], e, v))
                n *= v
            total += n * DTYPE_BYTES[b["dtype"]]
            names.add(b["name"])
            init = b.get("init")
            if b["role"] != "out" and init is None:
                errs.append("buffer %s has no init" % b["name"])
            if init and init["dist"] == "int":
                lo, hi = ev(init["low"], params), ev(init["high"], params)
                if hi <= lo:
                    errs.append("int init empty")
            if init and "fan_in" in init:
                if ev(init["fan_in"], params) <= 0:
                    errs.append("fan_in <= 0")
        scr = set()
        for sc in t["reference"].get("scratch", []):
            scr.add(sc["name"])
            total_s = ev(sc["count"], params) * DTYPE_BYTES[sc["dtype"]]
            if total_s > (4 << 30):
                errs.append("shape %s: scratch %s %d bytes > 4 GiB" % (s["name"], sc["name"], total_s))
        if total > MAX_BYTES:
            errs.append("shape %s: buffers %.2f GiB > 20 GiB" % (s["name"], total / 2 ** 30))
        check_plan("reference", t["reference"]["plan"], sigs, params, names | scr, errs)
        if "example" in t:
            exs = {x["name"] for x in t["example"].get("scratch", [])}
            check_plan("example", t["example"]["plan"], ex_sigs, params, names | exs, errs)
        for k in ("flops", "bytes"):
            if k in t:
                ev(t[k], params)
        report.append((t["name"], s["name"], total))
    if nvcc:
        files = [t["reference"]["source_file"]]
        if "example" in t:
            files.append(t["example"]["source_file"])
        for f in files:
            r = subprocess.run([NVCC, "-arch=sm_90a", "-cubin", "-std=c++17", "-o", "/dev/null",
                                os.path.join(d, f)], capture_output=True, text=True)
            if r.returncode != 0 or r.stderr.strip():
                errs.append("nvcc %s: %s" % (f, (r.stderr or r.stdout)[:2000]))
    return t, errs


def main():
    args = sys.argv[1:]
    nvcc = "--nvcc" in args
    only = None
    if "--only" in args:
        only = args[args.index("--only") + 1]
    rest = [a for a in args if not a.startswith("--") and a != only]
    root = rest[0] if rest else os.path.join(os.path.dirname(__file__), "..", "..", "tasks")
    paths = task_paths(root)
    bad = 0
    count = 0
    for p in paths:
        if only and only not in p:
            continue
        count += 1
        report = []
        try:
            t, errs = check(p, nvcc, report)
        except Exception as e:  # noqa: BLE001 - report and go on
            errs = ["exception: %r" % (e,)]
        if errs:
            bad += 1
            print("FAIL %s" % p)
            for e in errs:
                print("   " + e)
        else:
            print("ok   %s  (%s)" % (os.path.relpath(p, root),
                                     ", ".join("%s %.2f GiB" % (r[1], r[2] / 2 ** 30) for r in report)))
    print("%d tasks, %d failed" % (count, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
