"""taskgen - helpers that write kevald task files (JSON + CUDA reference).

The level-1 library under tasks/level1/ is generated from the definitions in
tools/tasks/l1_*.py by tools/tasks/gen_level1.py, so that every task follows
the same conventions (provenance from /work/shared/kernelbench/problems.json,
shape sets, tolerances).  The generated files are committed; the generator is
the easy way to change a convention everywhere at once.  A task may also be
written by hand: kevald only reads the JSON and the .cu beside it.
"""
import json
import os
import re
import slower_notes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TASKS_DIR = os.path.join(ROOT, "tasks", "level1")
PROBLEMS_JSON = os.environ.get("KEVALD_KERNELBENCH_PROBLEMS",
                               "/work/shared/kernelbench/problems.json")
# A frozen copy of the published times, so the generator runs without /work/shared.
FROZEN = os.path.join(os.path.dirname(__file__), "kernelbench_l1_times.json")


def _load_problems():
    if os.path.exists(PROBLEMS_JSON):
        with open(PROBLEMS_JSON) as f:
            probs = json.load(f)
        out = {}
        for p in probs:
            if p["level"] != 1:
                continue
            num = int(p["problem"].split("_", 1)[0])
            out[num] = {"problem": p["problem"],
                        "eager": p.get("h100_torch_eager_ms"),
                        "compile": p.get("h100_torch_compile_ms"),
                        "params": p.get("params")}
        with open(FROZEN, "w") as f:
            json.dump({str(k): v for k, v in sorted(out.items())}, f, indent=1)
            f.write("\n")
        return out
    with open(FROZEN) as f:
        return {int(k): v for k, v in json.load(f).items()}


PROBLEMS = None


def problem(num):
    global PROBLEMS
    if PROBLEMS is None:
        PROBLEMS = _load_problems()
    return PROBLEMS[num]


def snake(problem_name):
    """'23_Softmax' -> 'softmax'; '26_GELU_' -> 'gelu'."""
    s = problem_name.split("_", 1)[1]
    s = re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower()
    return s


def arg(t, v):
    return {"type": t, "value": v}


def i32(v):
    return arg("i32", v)


def i64(v):
    return arg("i64", v)


def u64(v):
    return arg("u64", v)


def f32(v):
    return arg("f32", v)


def launch(kernel, grid, block, args, shared="0"):
    return {"kernel": kernel, "grid": list(grid), "block": list(block),
            "shared": shared, "args": list(args)}


def gemm(a, b, c, m, n, k, trans_a=False, trans_b=False, batch=1, alpha=1.0, beta=0.0):
    return {"library": "gemm", "a": a, "b": b, "c": c, "m": m, "n": n, "k": k,
            "trans_a": trans_a, "trans_b": trans_b, "batch": batch,
            "alpha": alpha, "beta": beta}


def buf(name, shape, role="in", dtype="f32", init=None):
    d = {"name": name, "dtype": dtype, "shape": list(shape), "role": role}
    if init is not None:
        d["init"] = init
    return d


def normal(mean=0.0, std=1.0, **kw):
    d = {"dist": "normal", "mean": mean, "std": std}
    d.update(kw)
    return d


def uniform(low=-1.0, high=1.0, **kw):
    d = {"dist": "uniform", "low": low, "high": high}
    d.update(kw)
    return d


def intdist(low, high):
    return {"dist": "int", "low": str(low), "high": str(high)}


def mixed():
    return {"dist": "mixed"}


def scratch(name, dtype, count):
    return {"name": name, "dtype": dtype, "count": count}


def make_task(num, category, title, description, params, shapes, buffers, source,
              plan, *, scratch_bufs=None, tolerance=None, tolerance_note=None,
              flops=None, bytes_=None, trials=3, reference_note="", name=None,
              example=None, extra_provenance=None, slower_note=None):
    """Return (relative dir, task dict, {file name: text}) for one task."""
    p = problem(num)
    base = name or "l1_%d_%s" % (num, snake(p["problem"]))
    prov = {"source": "KernelBench", "level": 1, "problem": p["problem"],
            "h100_torch_eager_ms": p["eager"], "h100_torch_compile_ms": p["compile"],
            "reference_note": reference_note}
    slower_note = slower_note or slower_notes.note(base)
    if slower_note:
        # why the reference stays slower than 1.25x PyTorch (docs/tasks.md, "Yardsticks")
        prov["reference_slower_note"] = slower_note
    if extra_provenance:
        prov.update(extra_provenance)
    ref = {"source_file": base + ".cu", "options": ["-std=c++17"],
           "scratch": scratch_bufs or [], "plan": plan}
    task = {"name": base, "title": title, "description": description, "level": 1,
            "category": category, "provenance": prov, "params": params,
            "shapes": shapes, "buffers": buffers, "reference": ref,
            "tolerance": tolerance or {"atol": 1e-4, "rtol": 1e-4}}
    if tolerance_note:
        task["tolerance_note"] = tolerance_note
    if flops:
        task["flops"] = flops
    if bytes_:
        task["bytes"] = bytes_
    task["correctness_trials"] = trials
    files = {base + ".cu": source}
    if example:
        ex_src, ex_plan = example[0], example[1]
        ex = {"source_file": base + ".example.cu", "plan": ex_plan}
        if len(example) > 2 and example[2]:
            ex["scratch"] = example[2]
        task["example"] = ex
        files[base + ".example.cu"] = ex_src
    return category, task, files


def dumps(v, ind=0):
    """JSON with small objects and arrays on one line (readable task files)."""
    flat = json.dumps(v)
    if not isinstance(v, (dict, list)) or len(flat) + ind <= 96:
        return flat
    pad = " " * (ind + 2)
    if isinstance(v, list):
        items = [pad + dumps(x, ind + 2) for x in v]
        return "[\n" + ",\n".join(items) + "\n" + " " * ind + "]"
    items = [pad + json.dumps(k) + ": " + dumps(x, ind + 2) for k, x in v.items()]
    return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}"


def write_task(category, task, files):
    d = os.path.join(TASKS_DIR, category)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, task["name"] + ".json"), "w") as f:
        f.write(dumps(task) + "\n")
    for fname, text in files.items():
        with open(os.path.join(d, fname), "w") as f:
            f.write(text.lstrip("\n"))
