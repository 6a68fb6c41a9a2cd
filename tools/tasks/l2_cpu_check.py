#!/usr/bin/python3
"""l2_cpu_check - run the level-2 task references on the CPU and compare them with numpy.

Usage: /usr/bin/python3 tools/tasks/l2_cpu_check.py [--shapes tiny,small] [--only SUBSTR] [--max-elems N]

The driver of tools/tasks/cpu_check.py (the reference .cu compiled with g++
against tools/tasks/cpu/cuda_cpu_shim.h; cuBLAS steps become a
double-accumulating host GEMM) with an independent float64 numpy
implementation of each level-2 task (NP2 below), compared under the task's
tolerance. A development check for machines without a GPU; the GPU oracle
(tools/oracle/oracle.py with torch_ops_level2.py) is the real one.
"""
import glob
import json
import os
import sys
import tempfile
from math import erf

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cpu_check  # noqa: E402
from check_tasks import ev  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
_erf = np.vectorize(erf)


def sig(v):
    return 1 / (1 + np.exp(-v))


def gelu(v):
    return 0.5 * v * (1 + _erf(v / np.sqrt(2)))


def mish(v):
    return v * np.tanh(np.logaddexp(0, v))


def leaky(v, s):
    return np.where(v > 0, v, s * v)


def hswish(v):
    return v * np.clip(v + 3, 0, 6) / 6


def lse(v):
    m = v.max(1, keepdims=True)
    return m + np.log(np.exp(v - m).sum(1, keepdims=True))


def lin(d, w="W", b="b", x="x"):
    t = d[x] @ d[w].T
    return t + d[b] if b in d else t


def gn(t, G):
    M, N = t.shape
    r = t.reshape(M, G, N // G)
    m = r.mean(2, keepdims=True)
    v = ((r - m) ** 2).mean(2, keepdims=True)
    return ((r - m) / np.sqrt(v + 1e-5)).reshape(M, N)


def conv(d):
    x, w = d["x"], d["w"]
    K = w.shape[2]
    OH, OW = x.shape[2] - K + 1, x.shape[3] - K + 1
    y = np.zeros((x.shape[0], w.shape[0], OH, OW))
    for kh in range(K):
        for kw in range(K):
            y += np.einsum("nchw,oc->nohw", x[:, :, kh:kh + OH, kw:kw + OW], w[:, :, kh, kw])
    return y + d["cb"].reshape(1, -1, 1, 1)


def np2(name, inp, P):
    d = {k: v.astype(np.float64) for k, v in inp.items()}
    num = int(name.split("_")[1])
    if num == 45:
        h = sig(lin(d, "W1", "b1"))
        return {"y": lse(h @ d["W2"].T + d["b2"])[:, 0]}
    if num in (1, 57, 69, 71, 87, 67):
        c = conv(d)
        if num == 1: return {"y": np.maximum(c, 0) + d["bias"].reshape(1, -1, 1, 1)}
        if num == 57: return {"y": hswish(np.maximum(c, 0))}
        if num == 69: return {"y": np.maximum(hswish(c), 0)}
        if num == 71: return {"y": leaky(c / 2, 0.01)}
        if num == 87: return {"y": mish(c - 0.7)}
        return {"y": gelu(c).mean((2, 3))}
    if num == 76:
        return {"y": np.maximum(d["x"] @ d["W"].T + d["bias"], 0)}
    t = lin(d)
    if num == 9: return {"y": np.maximum((t - 2) * 1.5, 0)}
    if num == 12: return {"y": leaky(2 * t, 0.1)}
    if num == 29: return {"y": mish(mish(t))}
    if num == 40: return {"y": 1.5 * t}
    if num == 53: return {"y": gelu(np.clip(0.5 * t, -2, 2))}
    if num == 59: return {"y": 2 * t * sig(t)}
    if num == 63: return {"y": np.maximum(t, 0) / 2}
    if num == 68: return {"y": np.minimum(t, 2) - 2}
    if num == 70: return {"y": 2 * sig(t) + t}
    if num == 81: return {"y": np.tanh(np.clip(t * sig(t) / 2, -1, 1))}
    if num == 86: return {"y": gelu(t / 10)}
    if num == 95:
        v = t + d["add_value"]
        return {"y": np.clip(gelu(np.tanh(v * sig(v))), -1, 1)}
    if num == 18: return {"y": t.sum(1, keepdims=True)}
    if num == 56: return {"y": sig(t).sum(1, keepdims=True)}
    if num == 22:
        l = lse(np.clip(4 * t, -10, 10))
        return {"y": l * mish(l)}
    if num == 64:
        return {"y": gelu(gelu(leaky(leaky(lse(t), 0.01), 0.01)))}
    if num == 99:
        g = gelu(t)
        return {"y": np.exp(g - lse(g))}
    if num in (30, 62, 88):
        v = gn(t, P["G"])
        if num == 30: return {"y": np.clip(v, -2, 2)}
        if num == 62: return {"y": 2 * leaky(v, 0.01)}
        v = v * sig(v) * d["multiply_weight"]
        return {"y": v * sig(v)}
    raise KeyError(name)


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
    cpu_check.np_op = np2
    nbad = 0
    for p in sorted(glob.glob(os.path.join(ROOT, "tasks", "level2", "**", "*.json"), recursive=True)):
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
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    res = cpu_check.run_one(p, task, s, tmp)
                except Exception as e:  # noqa: BLE001
                    res = "ERROR %r" % (e,)
            bad = "MISMATCH" in res or "failed" in res or "ERROR" in res
            nbad += bad
            print("%s %-60s %-7s %s" % ("FAIL" if bad else "ok  ", task["name"], s["name"], res),
                  flush=True)
    print("failures:", nbad)
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
