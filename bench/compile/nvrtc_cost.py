#!/usr/bin/python3
"""
bench/compile/nvrtc_cost.py - where one compile-mode candidate's NVRTC time goes (issue 24's
batch of 500), without the worker around it: small kernels of three kinds (elementwise,
a shared-memory softmax row, one that includes <cuda_fp16.h>), each with its own name and
constants as an RL batch's are, compiled by libnvrtc (ctypes) with the options the compile
worker passes (worker/compile/compile.c, run_nvrtc: -std=c++17, -arch=sm_90a, the include
folders, --ptxas-options=-v, the header shims with -include kevald_prelude.h, -lineinfo,
-minimal), and with one change at a time:

    as-is       the worker's options (CUBIN: ptxas runs inside NVRTC)
    ptx         -arch=compute_90a: PTX only, no ptxas (front end + NVVM)
    pch         + -pch (NVRTC's automatic precompiled headers; it writes under $TMPDIR,
                which the compile sandbox does not allow)
    nolineinfo  without -lineinfo
    nominimal   without -minimal
    empty       as-is on an empty kernel (NVRTC's fixed cost per program)
    batch10     10 of the kernels in one program (per kernel)
    group8      8 of the kernels as the compile worker merges a group (worker/compile/group.h:
                each in a namespace of its own after a `#line`, its extern "C" name renamed,
                diagnostics pushed and popped, the end-of-namespace check), per kernel; the
                probe program a group also needs (~10 ms, front end only) is not included

Per kernel every configuration runs once, in a rotating order, in this one process, so the
machine's load drifts over all of them alike; CPU time (time.process_time). Prints the
median ms per compile and the ratio to as-is.

    bench/compile/nvrtc_cost.py [--cuda /usr/local/cuda] [--n 60]
"""
import argparse
import ctypes
import os
import statistics
import tempfile
import time

KINDS = {
    "e": r'''
extern "C" __global__ void scale_%(i)d(const float* __restrict__ x, float* __restrict__ y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = fmaxf(x[i] * %(i)d.5f, 0.0f) + (float)M_PI;
}
''',
    "s": r'''
extern "C" __global__ void softmax_%(i)d(const float* __restrict__ x, float* __restrict__ y, int cols)
{
        __shared__ float red[256];
        const float* r = x + (size_t)blockIdx.x * cols;
        float m = -INFINITY;
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
                m = fmaxf(m, r[c] * %(i)d.0f);
        red[threadIdx.x] = m;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
                __syncthreads();
        }
        m = red[0];
        __syncthreads();
        float t = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
                t += expf(r[c] * %(i)d.0f - m);
        red[threadIdx.x] = t;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        red[threadIdx.x] += red[threadIdx.x + s];
                __syncthreads();
        }
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
                y[(size_t)blockIdx.x * cols + c] = expf(r[c] * %(i)d.0f - m) / red[0];
}
''',
    "f": r'''#include <cuda_fp16.h>
extern "C" __global__ void half_%(i)d(const __half* __restrict__ x, __half* __restrict__ y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = __hmul(x[i], __float2half(%(i)d.25f));
}
''',
}
EMPTY = 'extern "C" __global__ void empty_%(i)d() {}\n'


def group_text(srcs, tag="00000000deadbeef"):
    """@srcs merged as worker/compile/group.c's group_merged_source() writes them."""
    out = ["#include <cuda_fp16.h>\n"]
    for i, src in enumerate(srcs):
        ns = "__kvg%s_%d" % (tag, i)
        name = src.split("void ", 1)[1].split("(", 1)[0]
        out.append("#pragma nv_diagnostic push\n#define %s %s_%s\nnamespace %s {\n#line 1 \"%s.cu\"\n"
                   % (name, ns, name, ns, ns))
        out.append(src.replace("#include <cuda_fp16.h>\n", ""))
        out.append("\n\n#undef %s\nstruct %s_end {};\n}\n#line 1 \"__kvg%s_w.cu\"\n" % (name, ns, tag))
        out.append("static_assert(sizeof(::%s::%s_end) == 1, \"\");\n#pragma nv_diagnostic pop\n" % (ns, ns))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", default="/usr/local/cuda")
    ap.add_argument("--n", type=int, default=60, help="kernels per configuration")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lib = ctypes.CDLL(os.path.join(a.cuda, "lib64", "libnvrtc.so"))
    shim_dir = os.path.join(root, "worker", "compile", "stdshim")
    shims = {f: open(os.path.join(shim_dir, f)).read() for f in os.listdir(shim_dir)}
    shims["cub/cub.cuh"] = shims.pop("cub.cuh")
    hs = (ctypes.c_char_p * len(shims))(*[v.encode() for v in shims.values()])
    ns = (ctypes.c_char_p * len(shims))(*[k.encode() for k in shims.keys()])
    inc = ["-I" + os.path.join(a.cuda, "include"), "-I" + os.path.join(a.cuda, "include", "cccl")]

    def opts(cfg):
        o = ["-std=c++17", "-arch=compute_90a" if cfg == "ptx" else "-arch=sm_90a"] + inc
        o += ["--ptxas-options=-v", "-include", "kevald_prelude.h"]
        if cfg != "nolineinfo":
            o.append("-lineinfo")
        if cfg == "pch":
            o += ["-pch", "-pch-messages=false", "-pch-verbose=false"]
        return o

    def compile_ms(src, cfg):
        o = opts(cfg)
        t = time.process_time()
        for minimal in ((False,) if cfg == "nominimal" else (True, False)):
            prog = ctypes.c_void_p()
            assert lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"kernel.cu",
                                          len(shims), hs, ns) == 0
            oo = o + (["-minimal"] if minimal else [])
            arr = (ctypes.c_char_p * len(oo))(*[x.encode() for x in oo])
            r = lib.nvrtcCompileProgram(prog, len(oo), arr)
            lib.nvrtcDestroyProgram(ctypes.byref(prog))
            if r == 0:
                break
        assert r == 0, (cfg, src[:80])
        return (time.process_time() - t) * 1e3

    cfgs = ["as-is", "ptx", "pch", "nolineinfo", "nominimal", "empty", "batch10", "group8"]
    kinds = list(KINDS)
    times = {c: [] for c in cfgs}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TMPDIR"] = tmp       # where -pch writes its files
        for i in range(a.n):
            src = KINDS[kinds[i % len(kinds)]] % {"i": 1000 + i}
            order = cfgs[i % len(cfgs):] + cfgs[:i % len(cfgs)]
            for c in order:
                if c == "empty":
                    times[c].append(compile_ms(EMPTY % {"i": 1000 + i}, "as-is"))
                elif c == "batch10":
                    many = "".join(KINDS[kinds[(i + j) % len(kinds)]] % {"i": 5000 + 10 * i + j}
                                   for j in range(10))
                    # <cuda_fp16.h> once, at the top, as a merged source would have it
                    many = "#include <cuda_fp16.h>\n" + many.replace("#include <cuda_fp16.h>\n", "")
                    times[c].append(compile_ms(many, "as-is") / 10)
                elif c == "group8":
                    srcs = [KINDS[kinds[(i + j) % len(kinds)]] % {"i": 7000 + 10 * i + j} for j in range(8)]
                    times[c].append(compile_ms(group_text(srcs), "as-is") / 8)
                else:
                    times[c].append(compile_ms(src, c))
    base = statistics.median(times["as-is"][1:])
    print("%d kernels (kinds %s in turn), CPU ms per compile, first kernel of each left out" % (
        a.n, "/".join(kinds)))
    for c in cfgs:
        m = statistics.median(times[c][1:])
        print("  %-11s median %6.1f ms   %.2fx as-is" % (c, m, m / base))


if __name__ == "__main__":
    main()
