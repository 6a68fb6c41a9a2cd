#!/usr/bin/python3
"""test_conv_gemm - the convolution plans of conv_gemm.py against numpy.

Usage: /usr/bin/python3 tools/tasks/test_conv_gemm.py

Runs every form (standard im2col, transposed gather, transposed col2im, and the implicit
GEMM kernel with each of its output-channel tiles, standard and transposed) on the CPU shim
(tools/tasks/cpu_check.py's driver: the kernels as C++, the GEMM steps as a double-
accumulating host GEMM) for convolutions the library's tasks do not all cover: groups
with stride, padding and dilation on a standard convolution, a transposed one with
output padding, 1-D/2-D/3-D, bias, a task epilogue that reads its operand, and batch
slicing with a partly empty last slice (N = 5 in 3 slices of 2), each with the library's
warp span (CONV_SPAN) and with a 5-element one (rows split into several spans). Each result is compared
with cpu_check.conv_np (numpy, float64) under the conv tasks' tolerance; outputs start as
NaN, so an element the plan never writes fails. Exit status 1 on any failure.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import conv_gemm  # noqa: E402
from cpu_check import build_driver, conv_np  # noqa: E402

AX = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}
ATOL, RTOL = 2e-4, 1e-3
EPI = "return (v > 0.0f ? v : 0.1f * v) * ep[co];"


def out_size(i, k, s, p, d, op, tr):
    if tr:
        return (i - 1) * s - 2 * p + d * (k - 1) + op + 1
    return (i + 2 * p - d * (k - 1) - 1) // s + 1


def case(nd, tr, form, slices, N, CI, CO, G, I, K, S, P, D, OP=None, bias=False, epi=False):
    """Run one plan on the CPU; return an error message or None."""
    ax = AX[nd]
    OP = OP or [0] * nd
    params = {"N": N, "CI": CI, "CO": CO, "G": G}
    for j, a in enumerate(ax):
        params.update({a: I[j], "K" + a: K[j], "S" + a: S[j], "P" + a: P[j], "D" + a: D[j],
                       "OP" + a: OP[j]})
    outs = []
    for a in ax:
        if tr:
            outs.append("(%s - 1) * S%s - 2 * P%s + D%s * (K%s - 1) + OP%s + 1" % ((a,) * 6))
        else:
            outs.append("(%s + 2 * P%s - D%s * (K%s - 1) - 1) / S%s + 1" % ((a,) * 5))
    conv = conv_gemm.Conv(nd, tr, "N", "CI", "CO", "G", ax, outs, ["K" + a for a in ax],
                          ["S" + a for a in ax], ["P" + a for a in ax], ["D" + a for a in ax])
    plan, scr = conv_gemm.plan(conv, form, slices, bias="b" if bias else None,
                               ep="e" if epi else None, epilogue=epi)
    O = [out_size(I[j], K[j], S[j], P[j], D[j], OP[j], tr) for j in range(nd)]
    wshape = [CI, CO // G] + K if tr else [CO, CI // G] + K
    rng = np.random.default_rng(7)
    inputs = {"x": rng.normal(0, 1, [N, CI] + I).astype(np.float32),
              "w": (rng.uniform(-1, 1, wshape) / np.sqrt(np.prod(wshape[1:]))).astype(np.float32)}
    bufs = [({"name": "x", "dtype": "f32", "role": "in"}, [N, CI] + I),
            ({"name": "w", "dtype": "f32", "role": "in"}, wshape)]
    if bias:
        inputs["b"] = rng.uniform(-1, 1, [CO]).astype(np.float32)
        bufs.append(({"name": "b", "dtype": "f32", "role": "in"}, [CO]))
    if epi:
        inputs["e"] = rng.uniform(0.5, 2, [CO]).astype(np.float32)
        bufs.append(({"name": "e", "dtype": "f32", "role": "in"}, [CO]))
    bufs.append(({"name": "y", "dtype": "f32", "role": "out"}, [N, CO] + O))
    task = {"reference": {"plan": plan}}
    scratch = [(s, conv_gemm.ev(s["count"], params)) for s in scr]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "ref.cu")
        with open(src, "w") as f:
            f.write(conv_gemm.source(EPI if epi else "return v;", form=form))
        files = []
        for b, _ in bufs:
            fn = os.path.join(tmp, b["name"] + ".bin")
            files.append(fn)
            if b["role"] == "in":
                inputs[b["name"]].tofile(fn)
        with open(os.path.join(tmp, "drv.cpp"), "w") as f:
            f.write(build_driver(task, src, params, bufs, scratch))
        exe = os.path.join(tmp, "drv")
        r = subprocess.run(["g++", "-O1", "-std=c++17", "-w", "-pthread", "-o", exe,
                            os.path.join(tmp, "drv.cpp")], capture_output=True, text=True)
        if r.returncode:
            return "compile failed: " + r.stderr[:2000]
        r = subprocess.run([exe] + files, capture_output=True, text=True, timeout=300)
        if r.returncode:
            return "run failed: rc %d" % r.returncode
        got = np.fromfile(files[-1], dtype=np.float32).astype(np.float64).reshape([N, CO] + O)
    want = conv_np(inputs["x"], inputs["w"], inputs.get("b"), S, P, D, G, tr, OP if tr else None)
    if epi:
        want = np.where(want > 0, want, 0.1 * want) * inputs["e"].astype(np.float64).reshape(
            (1, -1) + (1,) * nd)
    bad = ~(np.abs(got - want) <= ATOL + RTOL * np.abs(want))
    if bad.any():
        i = int(np.argmax(bad.reshape(-1)))
        return "%d/%d mismatches, first at %d: got %r want %r" % (
            int(bad.sum()), bad.size, i, got.reshape(-1)[i], want.reshape(-1)[i])
    return None


CASES = [
    # standard: groups with stride, padding and dilation; bias; epilogue; slices
    ("std 2d G=2 s(2,1) p(1,2) d(2,2) bias", dict(nd=2, tr=False, form="im2col", slices=1, N=3, CI=4, CO=6, G=2, I=[11, 11], K=[3, 4], S=[2, 1], P=[1, 2], D=[2, 2], bias=True)),
    ("std 2d G=2 s(2,1) p(1,2) d(2,2) bias+epilogue, 3 slices of 2 (N=5)", dict(nd=2, tr=False, form="im2col", slices=3, N=5, CI=4, CO=6, G=2, I=[11, 11], K=[3, 4], S=[2, 1], P=[1, 2], D=[2, 2], bias=True, epi=True)),
    ("std 1d s3 d4", dict(nd=1, tr=False, form="im2col", slices=1, N=2, CI=3, CO=5, G=1, I=[40], K=[3], S=[3], P=[0], D=[4])),
    ("std 3d G=3 s(1,2,2) p(1,0,1), 2 slices (N=3)", dict(nd=3, tr=False, form="im2col", slices=2, N=3, CI=3, CO=6, G=3, I=[4, 6, 7], K=[2, 3, 3], S=[1, 2, 2], P=[1, 0, 1], D=[1, 1, 1])),
    # transposed, col2im: groups, stride, padding, dilation, output padding; slices
    ("tr 2d col2im G=2 s(2,3) p(1,2) d(2,1) op(1,2) bias", dict(nd=2, tr=True, form="col2im", slices=1, N=2, CI=4, CO=6, G=2, I=[5, 6], K=[3, 4], S=[2, 3], P=[1, 2], D=[2, 1], OP=[1, 2], bias=True)),
    ("tr 2d col2im G=2 s(2,3) p(1,2) d(2,1) op(1,2) epilogue, 3 slices of 2 (N=5)", dict(nd=2, tr=True, form="col2im", slices=3, N=5, CI=4, CO=6, G=2, I=[5, 6], K=[3, 4], S=[2, 3], P=[1, 2], D=[2, 1], OP=[1, 2], epi=True)),
    ("tr 3d col2im G=2 s2 p1 op1", dict(nd=3, tr=True, form="col2im", slices=1, N=1, CI=4, CO=2, G=2, I=[3, 4, 5], K=[3, 3, 2], S=[2, 2, 2], P=[1, 1, 1], D=[1, 1, 1], OP=[1, 1, 1])),
    ("tr 1d col2im s3 p1 d2", dict(nd=1, tr=True, form="col2im", slices=2, N=3, CI=2, CO=3, G=1, I=[17], K=[3], S=[3], P=[1], D=[2])),
    # transposed, gather form (stride 1): groups, padding, dilation; slices
    ("tr 2d gather G=2 p(1,2) d(2,1) bias", dict(nd=2, tr=True, form="gather", slices=1, N=2, CI=4, CO=6, G=2, I=[5, 7], K=[3, 4], S=[1, 1], P=[1, 2], D=[2, 1], bias=True)),
    ("tr 3d gather G=2 p(0,1,1), 3 slices of 2 (N=5) epilogue", dict(nd=3, tr=True, form="gather", slices=3, N=5, CI=4, CO=2, G=2, I=[3, 4, 5], K=[2, 3, 3], S=[1, 1, 1], P=[0, 1, 1], D=[1, 1, 2], epi=True)),
    ("tr 1d gather d3", dict(nd=1, tr=True, form="gather", slices=1, N=2, CI=3, CO=2, G=1, I=[20], K=[5], S=[1], P=[0], D=[3])),
    # implicit GEMM, every tile: two output-channel tiles per group (the second partly
    # padding), position tiles that cross images, k rows past a phase's taps; transposed
    # with strides, so phases with no tap at all (stores only the bias and epilogue)
    ("implicit32 std 2d G=2 s(2,1) p(1,2) d(2,2) bias+epilogue", dict(nd=2, tr=False, form="implicit32", slices=1, N=3, CI=6, CO=80, G=2, I=[11, 13], K=[3, 4], S=[2, 1], P=[1, 2], D=[2, 2], bias=True, epi=True)),
    ("implicit64 std 1d s3 d4", dict(nd=1, tr=False, form="implicit64", slices=1, N=5, CI=3, CO=5, G=1, I=[70], K=[3], S=[3], P=[0], D=[4])),
    ("implicit128 std 3d G=3 s(1,2,2) p(1,0,1)", dict(nd=3, tr=False, form="implicit128", slices=1, N=3, CI=3, CO=6, G=3, I=[4, 6, 7], K=[2, 3, 3], S=[1, 2, 2], P=[1, 0, 1], D=[1, 1, 1])),
    ("implicit32 tr 2d G=2 s(2,3) p(1,2) d(2,1) op(1,2) bias+epilogue", dict(nd=2, tr=True, form="implicit32", slices=1, N=2, CI=4, CO=70, G=2, I=[5, 6], K=[3, 4], S=[2, 3], P=[1, 2], D=[2, 1], OP=[1, 2], bias=True, epi=True)),
    ("implicit64 tr 3d G=2 s2 p1 op1", dict(nd=3, tr=True, form="implicit64", slices=1, N=1, CI=4, CO=2, G=2, I=[3, 4, 5], K=[3, 3, 2], S=[2, 2, 2], P=[1, 1, 1], D=[1, 1, 1], OP=[1, 1, 1])),
    ("implicit128 tr 1d s5 p1 d2 (phases without a tap)", dict(nd=1, tr=True, form="implicit128", slices=1, N=3, CI=2, CO=3, G=1, I=[37], K=[3], S=[5], P=[1], D=[2], bias=True)),
    # the 128-channel tile (3xTF32): more than 64 and 128 output channels, so both warp rows,
    # every m16 tile and its rows g + 8 hold real channels, and a second channel tile
    ("implicit128 std 2d CO=130 s(1,2) p1 d(1,2) bias+epilogue", dict(nd=2, tr=False, form="implicit128", slices=1, N=2, CI=5, CO=130, G=1, I=[7, 9], K=[3, 3], S=[1, 2], P=[1, 1], D=[1, 2], bias=True, epi=True)),
    ("implicit128 tr 1d CO=131 s2 p1 op1", dict(nd=1, tr=True, form="implicit128", slices=1, N=3, CI=4, CO=131, G=1, I=[9], K=[3], S=[2], P=[1], D=[1], OP=[1])),
    ("implicit64 tr 2d gather G=2 p(1,2) d(2,1) bias", dict(nd=2, tr=True, form="implicit64", slices=1, N=2, CI=4, CO=6, G=2, I=[5, 7], K=[3, 4], S=[1, 1], P=[1, 2], D=[2, 1], bias=True)),
]


def main():
    nbad = 0
    # the library's span, and a short one that splits every output row into several
    # warp spans with a partial last one
    for span in (conv_gemm.SPAN, 5):
        conv_gemm.SPAN = span
        for name, kw in CASES:
            err = case(**kw)
            nbad += err is not None
            print("%s span %-4d %s%s" % ("FAIL" if err else "ok  ", span, name,
                                         ": " + err if err else ""), flush=True)
    print("%d cases, %d failed" % (2 * len(CASES), nbad))
    sys.exit(1 if nbad else 0)


if __name__ == "__main__":
    main()
