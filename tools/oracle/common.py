"""common - shared helpers for the oracle scripts (GPU host: python3, torch, cupy).

Task loading and expression evaluation, input generation from a task's init
spec (torch, on the GPU), the tolerance rule of kevald's judge, dump loading
(the manifest that `kevald eval --dump DIR` writes), and a stand-alone runner
for a task's reference plan (cupy's NVRTC for the kernels, torch.matmul with
TF32 off for the cuBLAS steps), so the scripts work with or without kevald.
"""
import glob
import json
import os
import re
import sys

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "tasks"))
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)
TORCH_DT = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
            "bf16": torch.bfloat16, "i32": torch.int32, "i64": torch.int64, "u8": torch.uint8,
            "i8": torch.int8}
NP_DT = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32,
         "i64": np.int64, "u8": np.uint8, "i8": np.int8}


def fp32_strict():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception:  # noqa: BLE001
        pass


def ev(expr, params):
    """kevald's integer expressions: + - * / % ceil_div min max, truncating division."""
    if isinstance(expr, (int, float)):
        return int(expr)
    if not re.fullmatch(r"[A-Za-z0-9_+\-*/%(), ]+", expr):
        raise ValueError("bad expression %r" % expr)

    def ceil_div(a, b):
        return -(-a // b)
    env = dict(params)
    env.update({"ceil_div": ceil_div, "min": min, "max": max, "__builtins__": {}})
    return int(eval(expr.replace("/", "//"), env))  # noqa: S307 - charset checked


def load_tasks(tasks_dir=None):
    tasks = {}
    root = tasks_dir or os.path.join(ROOT, "tasks")
    for p in task_paths(root):
        with open(p) as f:
            t = json.load(f)
        t["_dir"] = os.path.dirname(p)
        tasks[t["name"]] = t
    return tasks


def filter_tasks(tasks, categories):
    if not categories:
        return tasks
    want = set(categories.split(","))
    return {k: v for k, v in tasks.items() if v.get("category") in want}


def shape_params(task, shape_name):
    for s in task["shapes"]:
        if s["name"] == shape_name:
            return {k: v for k, v in s.items() if k != "name"}
    raise KeyError("%s has no shape set %s" % (task["name"], shape_name))


def buffer_shape(b, params):
    return [ev(e, params) for e in b["shape"]]


def gen_input(b, params, gen, device="cuda"):
    init = b["init"]
    shp = buffer_shape(b, params)
    n = int(np.prod(shp)) if shp else 1
    d = init["dist"]
    if d == "normal":
        v = torch.randn(n, generator=gen, device=device) * init.get("std", 1.0) + init.get("mean", 0.0)
    elif d == "uniform":
        lo, hi = init.get("low", -1.0), init.get("high", 1.0)
        v = torch.rand(n, generator=gen, device=device) * (hi - lo) + lo
    elif d == "int":
        v = torch.randint(ev(init["low"], params), ev(init["high"], params), (n,), generator=gen,
                          device=device, dtype=torch.int64)
    elif d == "mixed":
        sign = torch.randint(0, 2, (n,), generator=gen, device=device).float() * 2 - 1
        v = sign * torch.pow(10.0, torch.rand(n, generator=gen, device=device) * 6 - 3)
    else:
        raise ValueError("unknown dist " + d)
    if "offset" in init:
        v = v + init["offset"]
    if "fan_in" in init:
        v = v / float(np.sqrt(ev(init["fan_in"], params)))
    return v.to(TORCH_DT[b["dtype"]]).reshape(shp)


def gen_inputs(task, params, seed, device="cuda"):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return {b["name"]: gen_input(b, params, gen, device) for b in task["buffers"] if b["role"] != "out"}


def tolerance(task, bufname=None):
    t = task.get("tolerance", {})
    return float(t.get("atol", 1e-4)), float(t.get("rtol", 1e-4))


def compare(got, want, atol, rtol, chunk=1 << 26):
    """kevald's rule: |got - want| <= atol + rtol * |want|, NaN/Inf must agree.
    Returns (passed, max_abs, max_rel, mismatches). Works in chunks (big tensors)."""
    g_all = got.reshape(-1)
    w_all = want.reshape(-1)
    mism = 0
    max_abs = 0.0
    max_rel = 0.0
    for i in range(0, max(g_all.numel(), 1), chunk):
        g = g_all[i:i + chunk].to(torch.float64)
        w = w_all[i:i + chunk].to(torch.float64)
        finite = torch.isfinite(w) & torch.isfinite(g)
        same_nonfinite = (~torch.isfinite(w)) & (~torch.isfinite(g)) & (
            (torch.isnan(w) & torch.isnan(g)) | (w == g))
        err = torch.where(finite, (g - w).abs(), torch.zeros_like(g))
        ok = torch.where(finite, err <= atol + rtol * w.abs(), same_nonfinite)
        mism += int((~ok).sum().item())
        if err.numel():
            max_abs = max(max_abs, float(err.max().item()))
            rel = err / w.abs().clamp_min(1e-30)
            max_rel = max(max_rel, float(rel.max().item()))
    return mism == 0, max_abs, max_rel, mism


# ------------------------------------------------------------------ dumps
def load_dump(dump_dir, device="cuda"):
    """Yield (entry, inputs, outputs) for each (task, shape) of DIR/manifest.json
    (or of every DIR/*/manifest.json when DIR has none itself)."""
    mpath = os.path.join(dump_dir, "manifest.json")
    if not os.path.exists(mpath):
        for sub in sorted(glob.glob(os.path.join(dump_dir, "*", "manifest.json"))):
            yield from load_dump(os.path.dirname(sub), device)
        return
    with open(mpath) as f:
        man = json.load(f)
    if isinstance(man, dict):
        man = man.get("entries", man.get("shapes", []))
    for e in man:
        ins, outs = {}, {}
        for b in e["buffers"]:
            arr = np.fromfile(os.path.join(dump_dir, b["file"]), dtype=NP_DT[b["dtype"]])
            t = torch.from_numpy(arr).to(device).reshape(b["shape"])
            (outs if b["role"] == "out" else ins)[b["name"]] = t
        yield e, ins, outs


# ------------------------------------------------------------------ stand-alone reference runner
_MODULES = {}


def _module(task):
    import cupy
    key = task["name"]
    if key not in _MODULES:
        ref = task["reference"]
        if "source" in ref:
            src = ref["source"]
        else:
            with open(os.path.join(task["_dir"], ref["source_file"])) as f:
                src = f.read()
        opts = tuple(o for o in ref.get("options", []) if o.startswith(("-std", "-D")))
        _MODULES[key] = cupy.RawModule(code=src, options=opts, backend="nvrtc")
    return _MODULES[key]


def _scalar(a, params):
    t, v = a["type"], a["value"]
    if t in ("i32", "u32", "i64", "u64"):
        v = ev(v, params)
    return {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
            "f32": np.float32, "f64": np.float64}[t](v)


def run_reference_cpu(task, params, inputs):
    """Development stand-in without a GPU: the reference on the CPU CUDA shim
    (tools/tasks/cpu_check.py); slow, small shape sets only."""
    import subprocess
    import tempfile
    import cpu_check  # tools/tasks is on sys.path (above)
    with tempfile.TemporaryDirectory() as tmp:
        bufs, files = [], []
        for b in task["buffers"]:
            shp = buffer_shape(b, params)
            bufs.append((b, shp))
            fn = os.path.join(tmp, b["name"] + ".bin")
            files.append(fn)
            if b["role"] != "out":
                inputs[b["name"]].cpu().numpy().tofile(fn)
        scr = [(s, ev(s["count"], params)) for s in task["reference"].get("scratch", [])]
        drv = cpu_check.build_driver(task, os.path.join(task["_dir"], task["reference"]["source_file"]),
                                     params, bufs, scr)
        with open(os.path.join(tmp, "drv.cpp"), "w") as f:
            f.write(drv)
        subprocess.run(["g++", "-O1", "-std=c++17", "-w", "-pthread", "-o", os.path.join(tmp, "drv"),
                        os.path.join(tmp, "drv.cpp")], check=True)
        subprocess.run([os.path.join(tmp, "drv")] + files, check=True)
        return {b["name"]: torch.from_numpy(np.fromfile(os.path.join(tmp, b["name"] + ".bin"),
                                                        dtype=NP_DT[b["dtype"]]).reshape(shp))
                for b, shp in bufs if b["role"] == "out"}


def _gemm_step(st, params, bufs):
    """One `library: gemm` step as kevald's worker runs it (worker/gpu/blas.c): a
    row-major (batched) GEMM written straight into C, the transposes as
    operand flags (views, never copies), no temporaries. With alpha 1 and
    beta 0 (every plan in the library) C's old contents are not read.
    Returns a function that enqueues it."""
    if st["library"] != "gemm":
        raise ValueError("unknown library op " + st["library"])
    m, n, k, bt = (ev(st[x], params) for x in ("m", "n", "k", "batch"))
    A = bufs[st["a"]].reshape(-1)[:bt * m * k]
    B = bufs[st["b"]].reshape(-1)[:bt * k * n]
    A = A.reshape(bt, k, m).transpose(1, 2) if st["trans_a"] else A.reshape(bt, m, k)
    B = B.reshape(bt, n, k).transpose(1, 2) if st["trans_b"] else B.reshape(bt, k, n)
    C = bufs[st["c"]].reshape(-1)[:bt * m * n].reshape(bt, m, n)
    alpha, beta = float(st.get("alpha", 1.0)), float(st.get("beta", 0.0))
    # kevald: cublasGemmEx (batch 1) or cublasGemmStridedBatchedEx; torch's
    # mm/bmm/addmm_/baddbmm_ on these views are the same cuBLAS GEMMs with the
    # same operand flags, writing into C's storage (out= of the right shape
    # is never reallocated).
    if bt == 1:
        a2, b2, c2 = A[0], B[0], C[0]
        if alpha == 1.0 and beta == 0.0:
            return lambda: torch.mm(a2, b2, out=c2)
        return lambda: c2.addmm_(a2, b2, beta=beta, alpha=alpha)
    if alpha == 1.0 and beta == 0.0:
        return lambda: torch.bmm(A, B, out=C)
    return lambda: C.baddbmm_(A, B, beta=beta, alpha=alpha)


def prepare_reference(task, params, inputs, device="cuda", fill_outputs=True):
    """Allocate the reference's outputs and scratch once and bind its plan to
    them, as kevald's worker does before timing. Returns (outs, run, reset):
    outs {out name: tensor}; run() enqueues the plan (kernels through cupy's
    NVRTC module, GEMM steps as _gemm_step) and nothing else: no allocation,
    no fill, no copy, no synchronisation; reset() zeroes the outputs and the
    scratch (what kevald does after every timed reference run, outside the
    timed region). Outputs start as NaN (-1 for integers) when
    @fill_outputs, so an element the plan never writes shows in a
    comparison. Kernel steps need a GPU (cupy); GEMM steps also run on the
    CPU (used by test_common.py)."""
    bufs = dict(inputs)
    outs = {}
    for b in task["buffers"]:
        if b["role"] == "out":
            dt = TORCH_DT[b["dtype"]]
            fill = (float("nan") if dt.is_floating_point else -1) if fill_outputs else 0
            t = torch.full(buffer_shape(b, params), fill, device=device, dtype=dt)
            bufs[b["name"]] = outs[b["name"]] = t
    scratch = []
    for s in task["reference"].get("scratch", []):
        t = torch.zeros(max(ev(s["count"], params), 1), device=device, dtype=TORCH_DT[s["dtype"]])
        bufs[s["name"]] = t
        scratch.append(t)
    steps = []
    mod = None
    for st in task["reference"]["plan"]:
        if "library" in st:
            steps.append(_gemm_step(st, params, bufs))
            continue
        import cupy
        if mod is None:
            mod = _module(task)
        fn = mod.get_function(st["kernel"])
        grid = tuple(ev(x, params) for x in st["grid"]) + (1,) * (3 - len(st["grid"]))
        block = tuple(ev(x, params) for x in st["block"]) + (1,) * (3 - len(st["block"]))
        args = tuple(cupy.asarray(bufs[a]) if isinstance(a, str) else _scalar(a, params) for a in st["args"])
        shared = ev(st.get("shared", "0"), params)
        steps.append(lambda fn=fn, grid=grid, block=block, args=args, shared=shared:
                     fn(grid, block, args, shared_mem=shared))

    def run():
        for step in steps:
            step()

    def reset():
        for t in list(outs.values()) + scratch:
            t.zero_()
    return outs, run, reset


def run_reference(task, params, inputs, device="cuda"):
    """Run the task's reference plan on the GPU; returns {out name: tensor}."""
    if device == "cpu":
        return run_reference_cpu(task, params, inputs)
    outs, run, _ = prepare_reference(task, params, inputs, device)
    run()
    torch.cuda.synchronize()
    return outs


# KEVALD_ORACLE_DEVICE=cpu runs the scripts without a GPU (development only:
# torch on the CPU, references on the CPU shim, small shape sets).
DEVICE = os.environ.get("KEVALD_ORACLE_DEVICE", "cuda")


def empty_cache():
    if DEVICE != "cpu":
        torch.cuda.empty_cache()


def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        out.append("| " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(out) + "\n"
