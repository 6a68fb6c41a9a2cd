#!/usr/bin/python3
"""gen - write the KernelBench task family (tasks/kernelbench/) from a compact table.

Usage: python3 tools/kernelbench/gen.py [--check]

For every problem of /work/shared/kernelbench/problems.json (a frozen copy is
tools/kernelbench/problems.json) this writes a module
tasks/kernelbench/level<L>/<name>.py in KernelBench's format (module-level
constants, class Model, get_inputs(), get_init_inputs()) and one entry of
tasks/kernelbench/index.json (docs/tasks.md, "KernelBench format"). What each
Model computes is in table_l1.py and table_l2.py; this file turns a row into
text and works out the shape sets:

* default: problems.json's constants evaluated (KernelBench's sizes exactly),
  plus the row's `extra` constants where problems.json lacks one the module
  needs (spatial sizes of level-2 convolutions; a C task's default gives them
  where one exists);
* small, tiny: where a C task exists (tasks/level1, tasks/level2, same name
  rule), its small and tiny params through the row's `cmap` (KernelBench name
  -> expression over the C params); else a fixed shrink by constant name
  (SHRINK below) and the row's own overrides. Constants that problems.json
  defines from others (bias_shape = (out_channels, 1, 1)) are recomputed.

--check writes nothing and exits 1 if a committed file differs from what the
table gives (a test runs it).
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
import table_l1  # noqa: E402
import table_l2  # noqa: E402
from taskgen import snake  # noqa: E402

PROBLEMS = os.path.join(HERE, "problems.json")
OUT = os.path.join(ROOT, "tasks", "kernelbench")
ROWS = dict(table_l1.ROWS)
ROWS.update(table_l2.ROWS)

# Tolerance of a task without a C task: fp32 end to end, looser than the C
# tasks' 1e-4 because the reference is PyTorch eager (cuDNN/cuBLAS algorithms
# chosen at run time) rather than a fixed-order kernel.
TOL_DEFAULT = {"atol": 1e-3, "rtol": 1e-3}

# small and tiny sizes by constant name for tasks without a C task.
SHRINK = {
    "tiny": {"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 10, "width": 9, "depth": 6,
             "in_features": 33, "out_features": 16, "input_size": 33, "hidden_size": 16, "output_size": 8,
             "num_groups": 4, "groups": 4},
    "small": {"batch_size": 8, "in_channels": 8, "out_channels": 32, "height": 40, "width": 36, "depth": 12,
              "in_features": 512, "out_features": 256, "input_size": 512, "hidden_size": 256,
              "output_size": 128, "num_groups": 8, "groups": 8},
}
# 3-D inputs (a depth constant in get_inputs) get smaller spatial sizes at small.
SHRINK_3D = {"small": {"depth": 8, "height": 20, "width": 18}}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def problems():
    with open(PROBLEMS) as f:
        return json.load(f)


def tolist(v):
    if isinstance(v, tuple):
        return [tolist(e) for e in v]
    return v


def evaluate(params, env=None):
    """problems.json params (literals or Python expressions) -> values, in order."""
    env = dict(env or {})
    out = {}
    for k, v in params.items():
        if isinstance(v, str):
            v = eval(v, {"__builtins__": {}}, env)  # noqa: S307 (trusted data file)
        v = tolist(v)
        env[k] = v
        out[k] = v
    return out


def derived(params):
    """Names of params whose expression refers to another param."""
    out = set()
    for k, v in params.items():
        if isinstance(v, str) and any(t in params for t in IDENT.findall(v)):
            out.add(k)
    return out


def c_task_path(level, name):
    hits = glob.glob(os.path.join(ROOT, "tasks", "level%d" % level, "**", name + ".json"), recursive=True)
    return hits[0] if hits else None


def c_params(task, shape):
    for s in task["shapes"]:
        if s["name"] == shape:
            return {k: v for k, v in s.items() if k != "name"}
    raise KeyError(shape)


def conv_cmap(defaults, spatial):
    axes = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}[len(spatial)]
    cm = {"batch_size": "N", "in_channels": "CI"}
    if "out_channels" in defaults:
        cm["out_channels"] = "CO"
    for name, ax in zip(spatial, axes):
        cm[name] = ax
    for kb, c in (("kernel_size", "K"), ("stride", "S"), ("padding", "PAD"), ("dilation", "DIL"),
                  ("output_padding", "OPAD")):
        if kb in defaults:
            v = defaults[kb]
            cm[kb] = "[%s]" % ", ".join(c + a for a in axes) if isinstance(v, list) else c + axes[0]
    if "groups" in defaults and isinstance(defaults["groups"], int):
        cm["groups"] = "G"
    for kb, c in (("kernel_depth", "KD"), ("kernel_height", "KH"), ("kernel_width", "KW")):
        if kb in defaults:
            cm[kb] = c
    for kb, c in (("kernel_size", "K"), ("stride", "S"), ("padding", "PAD"), ("dilation", "DIL")):
        for suf, a in (("_h", "H"), ("_w", "W")):
            if kb + suf in defaults:
                cm[kb + suf] = c + a
    return cm


def init_names(init):
    """Constructor argument names; (name, has_default) pairs."""
    out = []
    for a in [a.strip() for a in init.split(",") if a.strip()]:
        out.append((a.split("=")[0].strip(), "=" in a))
    return out


def needed_names(r):
    text = " ".join(r.get("inputs", [])) + " " + r.get("init_values", "")
    names = set(IDENT.findall(text))
    names |= {n for n, d in init_names(r.get("init", "")) if not d}
    return names


def build(p):
    level, num = p["level"], int(p["problem"].split("_")[0])
    r = ROWS[(level, num)]
    cname = "l%d_%d_%s" % (level, num, snake(p["problem"]))
    cpath = c_task_path(level, cname)
    ctask = json.load(open(cpath)) if cpath else None
    defaults = evaluate(p["params"])
    extra = dict(r.get("extra", {}))
    # Spatial sizes problems.json lacks: the C task's default, else the rule in table_l2.
    for nm in sorted(needed_names(r) - set(defaults) - set(extra) - {"torch", "dtype", "float16"}):
        if nm not in ("depth", "height", "width"):
            continue
        cm = r.get("cmap", {})
        if ctask and nm in cm:
            extra[nm] = eval(cm[nm], {}, c_params(ctask, "default"))  # noqa: S307
        elif nm == "depth":
            extra[nm] = 16
        else:
            three_d = "depth" in " ".join(r["inputs"])
            big = defaults.get("in_channels", 3) >= 16
            extra[nm] = (32 if big else 64) if three_d else (128 if big else 256)
    extra = {k: extra[k] for k in sorted(extra, key=["depth", "height", "width"].index)} \
        if set(extra) <= {"depth", "height", "width"} else extra
    defaults.update(extra)
    missing = [nm for nm, d in init_names(r.get("init", "")) if not d and nm not in defaults]
    if missing and "init_values" not in r:
        raise SystemExit("%s: constructor arguments %s are not constants" % (p["problem"], missing))
    der = derived(p["params"])
    cmap = r.get("cmap")
    if ctask and cmap is None:
        cmap = conv_cmap(defaults, r["conv_spatial"]) if "conv_spatial" in r else \
            {k: k for k in defaults if k in c_params(ctask, "default")}
    shapes = [{"name": "default", "constants": defaults}]
    for sname in ("small", "tiny"):
        c = dict(defaults)
        fixed = set()
        if ctask:
            cp = c_params(ctask, sname)
            for k, e in cmap.items():
                c[k] = eval(e, {}, dict(cp))  # noqa: S307
                fixed.add(k)
        else:
            for k, v in SHRINK[sname].items():
                if k in c and k not in der:
                    if k == "in_channels" and defaults[k] <= 3:
                        continue
                    if k in ("num_groups", "groups"):
                        v = min(v, defaults[k])
                    c[k] = v
            if "depth" in " ".join(r["inputs"]):
                c.update(SHRINK_3D.get(sname, {}))
        for k, v in r.get(sname, {}).items():
            c[k] = v
            fixed.add(k)
        env = {k: (tuple(v) if isinstance(v, list) else v) for k, v in c.items()}
        for k in p["params"]:
            if k in der and k not in fixed:
                c[k] = tolist(eval(p["params"][k], {"__builtins__": {}}, env))  # noqa: S307
                env[k] = tuple(c[k]) if isinstance(c[k], list) else c[k]
        shapes.append({"name": sname, "constants": c})
    name = ctask["name"] if ctask else cname
    entry = {"name": name, "level": level, "problem": p["problem"],
             "module": "level%d/%s.py" % (level, name), "c_task": ctask["name"] if ctask else None,
             "shapes": shapes,
             "tolerance": dict(ctask["tolerance"]) if ctask else dict(r.get("tolerance", TOL_DEFAULT)),
             "h100_torch_eager_ms": p.get("h100_torch_eager_ms"),
             "h100_torch_compile_ms": p.get("h100_torch_compile_ms")}
    return entry, module_text(p, r, entry, extra)


def literal(v):
    if isinstance(v, list):
        return "(" + ", ".join(literal(e) for e in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def module_text(p, r, entry, extra):
    lines = ['"""KernelBench level %d, %s: kevald task %s.' % (entry["level"], p["problem"], entry["name"]), ""]
    if entry["c_task"]:
        lines.append("Computes what the C task %s computes (tasks/level%d), with its input" % (entry["c_task"], entry["level"]))
        lines.append("distributions.")
    if r.get("note"):
        lines.append("Note: " + r["note"] + ".")
    if extra:
        lines.append("Constants not in KernelBench's list: %s." % ", ".join(extra))
    lines += ["Generated by tools/kernelbench/gen.py; edit its table, not this file.", '"""']
    body = []
    body.append("import torch")
    body.append("import torch.nn as nn")
    body.append("import torch.nn.functional as F")
    consts = []
    for k, v in p["params"].items():
        consts.append("%s = %s" % (k, v if isinstance(v, str) else literal(v)))
    for k, v in extra.items():
        consts.append("%s = %s" % (k, literal(v)))
    init = r.get("init", "")
    cls = ["", "", "class Model(nn.Module):",
           "    def __init__(self%s):" % (", " + init if init else ""),
           "        super().__init__()"]
    for ln in r.get("layers", []):
        cls.append("        " + ln)
    cls.append("")
    cls.append("    def forward(self, %s):" % r.get("args", "x"))
    for ln in r["fwd"]:
        cls.append("        " + ln)
    tail = ["", ""]
    for h in r.get("helpers", []):
        tail += h.split("\n") + ["", ""]
    tail.append("def get_inputs():")
    tail.append("    return [%s]" % ", ".join(r["inputs"]))
    tail += ["", ""]
    if "init_values" in r:
        iv = r["init_values"]
    else:
        iv = ", ".join(nm for nm, d in init_names(init) if not d or nm in entry["shapes"][0]["constants"])
    tail.append("def get_init_inputs():")
    tail.append("    return [%s]" % iv)
    text = "\n".join(lines + body + [""] + consts + cls + tail) + "\n"
    if "math." in text:
        text = text.replace("import torch\n", "import math\n\nimport torch\n", 1)
    return text


def main():
    check = "--check" in sys.argv[1:]
    entries = []
    files = {}
    for p in problems():
        e, text = build(p)
        entries.append(e)
        files[os.path.join(OUT, e["module"])] = text
    idx = json.dumps({"version": 1, "tasks": entries}, indent=1) + "\n"
    files[os.path.join(OUT, "index.json")] = idx
    stale = []
    for path, text in files.items():
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(os.path.relpath(path, ROOT))
            if not check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    have = set(glob.glob(os.path.join(OUT, "level*", "*.py")))
    extra = sorted(os.path.relpath(x, ROOT) for x in have - set(files))
    if check:
        for s in stale:
            print("stale: %s (run tools/kernelbench/gen.py)" % s)
        for s in extra:
            print("not generated: %s" % s)
        print("%d files, %d stale, %d extra" % (len(files), len(stale), len(extra)))
        return 1 if stale or extra else 0
    for s in extra:
        os.unlink(os.path.join(ROOT, s))
    print("wrote %d of %d files (%d tasks)" % (len(stale), len(files), len(entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
