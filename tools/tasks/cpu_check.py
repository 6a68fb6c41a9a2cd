#!/usr/bin/python3
"""cpu_check - run task references on the CPU and compare them with numpy.

Usage: /usr/bin/python3 tools/tasks/cpu_check.py [--shapes tiny,small] [--only SUBSTR] [--max-elems N]

For each task and shape set: draws the inputs with numpy from the task's init
spec, builds a C++ driver that includes tools/tasks/cpu/cuda_cpu_shim.h and the
reference .cu (blocks run one after another, a block's threads as pthreads),
runs the plan (cuBLAS steps become a double-accumulating host GEMM), and
compares every output with an independent numpy implementation of the task
(NP_OPS below) under the task's tolerance. A development check for machines
without a GPU; the GPU oracle (tools/oracle/oracle.py) is the real one.
"""
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_tasks import ev  # noqa: E402
from taskfiles import task_paths  # noqa: E402  (which files are tasks: common/tasklib.c's rule)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
NPDT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
        "i8": np.int8}
CT = {"f32": "float", "f64": "double", "i32": "int", "i64": "long long", "u8": "unsigned char",
      "i8": "signed char"}


def draw(rng, b, params, shape):
    init = b["init"]
    n = int(np.prod(shape)) if shape else 1
    d = init["dist"]
    if d == "normal":
        v = rng.normal(init.get("mean", 0), init.get("std", 1), n)
    elif d == "uniform":
        v = rng.uniform(init.get("low", -1), init.get("high", 1), n)
    elif d == "int":
        v = rng.integers(ev(init["low"], params), ev(init["high"], params), n)
    elif d == "mixed":
        v = rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-3, 3, n)
    else:
        raise ValueError(d)
    if "offset" in init:
        v = v + init["offset"]
    if "fan_in" in init:
        v = v / np.sqrt(ev(init["fan_in"], params))
    return v.astype(NPDT[b["dtype"]]).reshape(shape)


# ---------------------------------------------------------------- numpy ops
def conv_np(x, w, bias, S, Pd, Dl, G, transposed=False, OP=None):
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    nd = x.ndim - 2
    N, CI = x.shape[:2]
    I = x.shape[2:]
    K = w.shape[2:]
    if not transposed:
        CO = w.shape[0]
        cig, cog = CI // G, CO // G
        O = [(I[a] + 2 * Pd[a] - Dl[a] * (K[a] - 1) - 1) // S[a] + 1 for a in range(nd)]
        xp = np.pad(x, [(0, 0), (0, 0)] + [(Pd[a], Pd[a]) for a in range(nd)])
        y = np.zeros((N, CO) + tuple(O))
        for g in range(G):
            xg = xp[:, g * cig:(g + 1) * cig]
            wg = w[g * cog:(g + 1) * cog]
            for k in itertools.product(*[range(kk) for kk in K]):
                sl = tuple(slice(k[a] * Dl[a], k[a] * Dl[a] + (O[a] - 1) * S[a] + 1, S[a]) for a in range(nd))
                patch = xg[(slice(None), slice(None)) + sl]
                y[:, g * cog:(g + 1) * cog] += np.einsum("nc...,oc->no...", patch, wg[(slice(None), slice(None)) + k])
    else:
        cog = w.shape[1]
        CO = cog * G
        cig = CI // G
        O = [(I[a] - 1) * S[a] - 2 * Pd[a] + Dl[a] * (K[a] - 1) + OP[a] + 1 for a in range(nd)]
        full = [max((I[a] - 1) * S[a] + Dl[a] * (K[a] - 1) + 1, Pd[a] + O[a]) for a in range(nd)]
        yf = np.zeros((N, CO) + tuple(full))
        for g in range(G):
            xg = x[:, g * cig:(g + 1) * cig]
            wg = w[g * cig:(g + 1) * cig]
            for k in itertools.product(*[range(kk) for kk in K]):
                sl = tuple(slice(k[a] * Dl[a], k[a] * Dl[a] + (I[a] - 1) * S[a] + 1, S[a]) for a in range(nd))
                yf[(slice(None), slice(g * cog, (g + 1) * cog)) + sl] += np.einsum(
                    "nc...,co->no...", xg, wg[(slice(None), slice(None)) + k])
        y = yf[(slice(None), slice(None)) + tuple(slice(Pd[a], Pd[a] + O[a]) for a in range(nd))]
    if bias is not None:
        y = y + bias.astype(np.float64).reshape((1, -1) + (1,) * nd)
    return y


def pool_np(x, K, S, Pd, Dl, mx):
    x = x.astype(np.float64)
    nd = x.ndim - 2
    I = x.shape[2:]
    O = [(I[a] + 2 * Pd - Dl * (K - 1) - 1) // S + 1 for a in range(nd)]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(Pd, Pd)] * nd, constant_values=-np.inf if mx else 0.0)
    acc = np.full(x.shape[:2] + tuple(O), -np.inf if mx else 0.0)
    for k in itertools.product(*[range(K)] * nd):
        sl = tuple(slice(k[a] * Dl, k[a] * Dl + (O[a] - 1) * S + 1, S) for a in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]
        acc = np.maximum(acc, patch) if mx else acc + patch
    return acc if mx else acc / K ** nd


def axes(P):
    if "KD" in P:
        return ["D", "H", "W"]
    if "KH" in P:
        return ["H", "W"]
    return ["L"]


def np_op(name, inp, P):
    d = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in inp.items()}
    x = d.get("x")
    num = int(name.split("_")[1])
    from math import erf
    if num == 19: return {"y": np.maximum(x, 0)}
    if num == 20: return {"y": np.where(x >= 0, x, 0.01 * x)}
    if num == 21: return {"y": 1 / (1 + np.exp(-x))}
    if num == 22: return {"y": np.tanh(x)}
    if num == 25: return {"y": x / (1 + np.exp(-x))}
    if num == 26: return {"y": 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))}
    if num == 27:
        return {"y": 1.0507009873554804934193349852946 * np.where(x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x))}
    if num == 28: return {"y": np.clip(x + 3, 0, 6) / 6}
    if num == 29: return {"y": np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))}
    if num == 30: return {"y": x / (1 + np.abs(x))}
    if num == 31: return {"y": np.where(x > 0, x, np.expm1(x))}
    if num == 32: return {"y": np.clip(x, -1, 1)}
    if num == 88: return {"y": 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))}
    if num in (23, 24):
        m = x.max(1, keepdims=True)
        ls = np.log(np.exp(x - m).sum(1, keepdims=True))
        return {"y": np.exp(x - m - ls) if num == 23 else x - m - ls}
    if num == 47: return {"y": x.sum(1, keepdims=True)}
    if num == 48: return {"y": x.mean(1)}
    if num == 49: return {"y": x.max(1)}
    if num == 53: return {"y": x.min(1)}
    if num == 51: return {"y": x.argmax(1)}
    if num == 52: return {"y": x.argmin(1)}
    if num in (33, 34, 35, 40):
        N, C = x.shape[:2]
        if num == 33:
            ax = (0, 2, 3)
            xr = x
        elif num == 34:
            xr, ax = x, (2, 3)
        elif num == 35:
            xr, ax = x.reshape(N, P["G"], -1), (2,)
        else:
            xr, ax = x.reshape(N, -1), (1,)
        m = xr.mean(ax, keepdims=True)
        v = ((xr - m) ** 2).mean(ax, keepdims=True)
        return {"y": ((xr - m) / np.sqrt(v + 1e-5)).reshape(x.shape)}
    if num == 36: return {"y": x / np.sqrt((x ** 2).mean(1, keepdims=True) + 1e-5)}
    if num == 37: return {"y": x / np.sqrt((x ** 2).sum())}
    if num == 38: return {"y": x / np.abs(x).mean(1, keepdims=True)}
    if num == 39: return {"y": x / np.sqrt((x ** 2).sum(1, keepdims=True))}
    if 41 <= num <= 46:
        return {"y": pool_np(x, P["K"], P["S"], P["PAD"], P.get("DIL", 1), num <= 43)}
    if num == 89: return {"y": np.cumsum(x, 1)}
    if num == 90: return {"y": np.cumprod(x, 1)}
    if num == 91: return {"y": np.cumsum(x[:, ::-1], 1)[:, ::-1]}
    if num == 92: return {"y": np.cumsum(x, 1) - x}
    if num == 93: return {"y": np.cumsum(x * (d["mask"] != 0), 1)}
    if num == 94: return {"loss": np.mean((d["p"] - d["t"]) ** 2)}
    if num == 96:
        a = np.abs(d["p"] - d["t"])
        return {"loss": np.mean(np.where(a < 1, 0.5 * a * a, a - 0.5))}
    if num == 100: return {"loss": np.mean(np.maximum(0, 1 - d["p"] * d["t"][None, :]))}
    if num == 98: return {"loss": np.sum(d["t"] * (np.log(d["t"]) - np.log(d["p"]))) / d["p"].shape[0]}
    if num == 95:
        m = x.max(1, keepdims=True)
        lse = (m + np.log(np.exp(x - m).sum(1, keepdims=True)))[:, 0]
        return {"loss": np.mean(lse - x[np.arange(x.shape[0]), d["target"]])}
    if num == 99:
        dp = np.sqrt(((d["a"] - d["p"] + 1e-6) ** 2).sum(1))
        dn = np.sqrt(((d["a"] - d["n"] + 1e-6) ** 2).sum(1))
        return {"loss": np.mean(np.maximum(dp - dn + 1, 0))}
    A, B = d.get("A"), d.get("B")
    if num in (1, 2, 4, 6, 7, 8, 9, 10): return {"C": A @ B}
    if num == 3: return {"C": np.matmul(A, B)}
    if num == 11: return {"C": np.einsum("bijl,lk->bijk", A, B)}
    if num == 16: return {"C": A.T @ B}
    if num == 17: return {"C": A @ B.T}
    if num == 18: return {"C": A.T @ B.T}
    if num == 5: return {"C": A * d["s"].reshape(())}
    if num == 12: return {"C": d["a"][:, None] * B}
    if num == 13:
        sym = lambda X: np.tril(X) + np.tril(X, -1).T  # noqa: E731
        return {"C": sym(A) @ sym(B)}
    if num == 14: return {"C": np.triu(np.triu(A) @ np.triu(B))}
    if num == 15: return {"C": np.tril(np.tril(A) @ np.tril(B))}
    if num == 87:
        return {"y": np.einsum("oc,nchw->nohw", d["w"][:, :, 0, 0], x)}
    if num == 86:
        t = conv_np(d["x"], d["wd"], None, [P["S"]] * 2, [P["PAD"]] * 2, [P["DIL"]] * 2, P["CI"])
        return {"y": conv_np(t, d["wp"], None, [1, 1], [0, 0], [1, 1], 1)}
    if 50 <= num <= 87:
        ax = axes(P)
        tr = "OPAD" + ax[0] in P
        return {"y": conv_np(d["x"], d["w"], d.get("bias"), [P["S" + a] for a in ax],
                             [P["PAD" + a] for a in ax], [P["DIL" + a] for a in ax], P["G"], tr,
                             [P["OPAD" + a] for a in ax] if tr else None)}
    raise KeyError(name)


# ---------------------------------------------------------------- driver
def cval(a, params):
    t = a["type"]
    v = a["value"]
    if t in ("i32", "u32", "i64", "u64"):
        v = ev(v, params)
    c = {"i32": "(int)", "u32": "(unsigned)", "i64": "(long long)", "u64": "(unsigned long long)",
         "f32": "(float)", "f64": "(double)"}[t]
    return "%s(%r)" % (c, v)


def build_driver(task, src_path, params, bufs, scratch, plan_key="reference"):
    with open(src_path) as f:
        text = f.read()
        seq = "__syncthreads" not in text and "__shfl" not in text
    lines = (["#define SHIM_SEQUENTIAL 1"] if seq else []) + [
             '#include "%s"' % os.path.join(HERE, "cpu", "cuda_cpu_shim.h"),
             '#include "%s"' % src_path,
             "int main(int argc, char **argv) {",
             "  (void)argc;"]
    names = {}
    for i, (b, shape) in enumerate(bufs):
        n = int(np.prod(shape)) if shape else 1
        lines.append("  std::vector<%s> b%d(%d);" % (CT[b["dtype"]], i, n))
        if b["role"] != "out":
            lines.append('  { FILE *f = fopen(argv[1 + %d], "rb"); if (fread(b%d.data(), sizeof(b%d[0]), %d, f) != (size_t)%d) return 3; fclose(f); }'
                         % (i, i, i, n, n))
        else:
            lines.append("  for (auto &v : b%d) memset(&v, 0xff, sizeof v);" % i)
        names[b["name"]] = ("b%d" % i, b["dtype"])
    for j, (s, n) in enumerate(scratch):
        lines.append("  std::vector<%s> s%d(%d);" % (CT[s["dtype"]], j, max(n, 1)))
        names[s["name"]] = ("s%d" % j, s["dtype"])
    for st in (task[plan_key]["plan"] if plan_key == "reference" else task["example"]["plan"]):
        if "library" in st:
            A, B, C = (names[st[k]][0] for k in ("a", "b", "c"))
            lines.append("  shim_gemm(%s.data(), %s.data(), %s.data(), %d, %d, %d, %s, %s, %d, %r, %r);"
                         % (A, B, C, ev(st["m"], params), ev(st["n"], params), ev(st["k"], params),
                            "true" if st["trans_a"] else "false", "true" if st["trans_b"] else "false",
                            ev(st["batch"], params), st["alpha"], st["beta"]))
            continue
        g = [ev(x, params) for x in st["grid"]] + [1, 1]
        bl = [ev(x, params) for x in st["block"]] + [1, 1]
        args = []
        for a in st["args"]:
            if isinstance(a, str):
                args.append("AnyPtr{(void *)%s.data()}" % names[a][0])
            else:
                args.append(cval(a, params))
        lines.append("  shim_launch({%du, %du, %du}, {%du, %du, %du}, [&] { %s(%s); });"
                     % (g[0], g[1], g[2], bl[0], bl[1], bl[2], st["kernel"], ", ".join(args)))
    for i, (b, shape) in enumerate(bufs):
        if b["role"] == "out":
            n = int(np.prod(shape)) if shape else 1
            lines.append('  { FILE *f = fopen(argv[1 + %d], "wb"); fwrite(b%d.data(), sizeof(b%d[0]), %d, f); fclose(f); }'
                         % (i, i, i, n))
    lines.append("  return 0;\n}")
    return "\n".join(lines)


def run_one(path, task, shape, tmp, example=False):
    d = os.path.dirname(path)
    params = {k: v for k, v in shape.items() if k != "name"}
    rng = np.random.default_rng(1234)
    bufs = []
    files = []
    inputs = {}
    for b in task["buffers"]:
        shp = [ev(e, params) for e in b["shape"]]
        bufs.append((b, shp))
        fn = os.path.join(tmp, "%s.bin" % b["name"])
        files.append(fn)
        if b["role"] != "out":
            v = draw(rng, b, params, shp)
            v.tofile(fn)
            inputs[b["name"]] = v
    scr = [(s, ev(s["count"], params)) for s in
           (task["example"].get("scratch", []) if example else task["reference"].get("scratch", []))]
    src = task["example"]["source_file"] if example else task["reference"]["source_file"]
    drv = build_driver(task, os.path.join(d, src), params, bufs, scr,
                       "example" if example else "reference")
    cpp = os.path.join(tmp, "drv.cpp")
    exe = os.path.join(tmp, "drv")
    open(cpp, "w").write(drv)
    r = subprocess.run(["g++", "-O1", "-std=c++17", "-w", "-pthread", "-o", exe, cpp],
                       capture_output=True, text=True)
    if r.returncode:
        return "compile failed: " + r.stderr[:3000]
    r = subprocess.run([exe] + files, capture_output=True, text=True, timeout=600)
    if r.returncode:
        return "run failed rc=%d %s" % (r.returncode, r.stderr[:500])
    want = np_op(task["name"], inputs, params)
    tol = task["tolerance"]
    msgs = []
    for b, shp in bufs:
        if b["role"] != "out":
            continue
        got = np.fromfile(os.path.join(tmp, "%s.bin" % b["name"]), dtype=NPDT[b["dtype"]]).astype(np.float64)
        w = np.asarray(want[b["name"]], dtype=np.float64).reshape(-1)
        if w.size != got.size:
            msgs.append("%s: size %d != numpy %d" % (b["name"], got.size, w.size))
            continue
        err = np.abs(got - w)
        bad = ~(err <= tol["atol"] + tol["rtol"] * np.abs(w))
        rel = err / np.maximum(np.abs(w), 1e-30)
        msgs.append("%s: max_abs %.3g max_rel %.3g mismatches %d/%d%s" % (
            b["name"], err.max() if err.size else 0, rel.max() if rel.size else 0, int(bad.sum()), w.size,
            "" if not bad.any() else " FIRST idx %d got %r want %r" % (
                int(np.argmax(bad)), got[np.argmax(bad)], w[np.argmax(bad)])))
        if bad.any():
            msgs[-1] = "MISMATCH " + msgs[-1]
    return "; ".join(msgs)


def main():
    args = sys.argv[1:]
    shapes = ["tiny"]
    only = None
    maxel = 3_000_000
    if "--shapes" in args:
        shapes = args[args.index("--shapes") + 1].split(",")
    if "--only" in args:
        only = args[args.index("--only") + 1]
    if "--max-elems" in args:
        maxel = int(args[args.index("--max-elems") + 1])
    paths = task_paths(os.path.join(ROOT, "tasks"))
    nbad = 0
    for p in paths:
        if only and only not in p:
            continue
        task = json.load(open(p))
        for s in task["shapes"]:
            if s["name"] not in shapes:
                continue
            params = {k: v for k, v in s.items() if k != "name"}
            tot = sum(int(np.prod([ev(e, params) for e in b["shape"]])) for b in task["buffers"])
            if tot > maxel:
                print("skip %-60s %-7s (%d elements)" % (task["name"], s["name"], tot))
                continue
            for ex in ([False, True] if "example" in task else [False]):
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        res = run_one(p, task, s, tmp, ex)
                    except Exception as e:  # noqa: BLE001
                        res = "ERROR %r" % (e,)
                bad = "MISMATCH" in res or "failed" in res or "ERROR" in res
                nbad += bad
                print("%s %-60s %-7s %s%s" % ("FAIL" if bad else "ok  ", task["name"], s["name"],
                                               "(example) " if ex else "", res), flush=True)
    print("failures:", nbad)
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
