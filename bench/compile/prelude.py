#!/usr/bin/python3
"""
bench/compile/prelude.py - what kevald_prelude.h alone costs NVRTC, without
the worker around it: each task kernel compiled by libnvrtc (ctypes) with
the options the compile worker passes, once with the standard header shims
and `-include kevald_prelude.h` and once without, alternating, best of 3
each; per round the medians over the kernels and the median per-kernel
difference.

    bench/compile/prelude.py [--cuda /usr/local/cuda] [--rounds 2]
"""
import argparse
import ctypes
import glob
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lib = ctypes.CDLL(os.path.join(a.cuda, "lib64", "libnvrtc.so"))
    shim_dir = os.path.join(root, "worker", "compile", "stdshim")
    shims = {f: open(os.path.join(shim_dir, f)).read() for f in os.listdir(shim_dir)}
    shims["cub/cub.cuh"] = shims.pop("cub.cuh")
    base = ["-arch=sm_90a", "-I" + os.path.join(a.cuda, "include"), "-I" + os.path.join(a.cuda, "include", "cccl"),
            "--ptxas-options=-v", "-lineinfo"]

    def nvrtc(src, headers, opts):
        prog = ctypes.c_void_p()
        n = len(headers)
        hs = (ctypes.c_char_p * n)(*[v.encode() for v in headers.values()])
        ns = (ctypes.c_char_p * n)(*[k.encode() for k in headers.keys()])
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu", n, hs, ns) == 0
        for minimal in (True, False):
            o = base + opts + (["-minimal"] if minimal else [])
            arr = (ctypes.c_char_p * len(o))(*[x.encode() for x in o])
            r = lib.nvrtcCompileProgram(prog, len(o), arr)
            if r == 0:
                break
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return r

    files = sorted(f for f in glob.glob(os.path.join(root, "tasks", "**", "*.cu"), recursive=True)
                   if not f.endswith(".example.cu"))
    variants = {"with": (shims, ["-include", "kevald_prelude.h"]), "without": ({}, [])}
    for rnd in range(a.rounds):
        per = []
        for f in files:
            src = open(f).read()
            best = {}
            for rep in range(3):
                for tag in (("with", "without") if rep % 2 == 0 else ("without", "with")):
                    t = time.perf_counter()
                    r = nvrtc(src, *variants[tag])
                    dt = time.perf_counter() - t
                    assert r == 0, (f, tag)
                    best[tag] = min(best.get(tag, 1e9), dt)
            per.append((best["with"], best["without"]))
        w = statistics.median(x for x, _ in per)
        wo = statistics.median(y for _, y in per)
        print("round %d: %d task kernels; median of best-of-3: with the prelude %.1f ms, without %.1f ms, "
              "ratio %.3f; median per-kernel difference %.2f ms" % (
                  rnd, len(per), w * 1e3, wo * 1e3, w / wo, statistics.median((x - y) * 1e3 for x, y in per)))


if __name__ == "__main__":
    main()
