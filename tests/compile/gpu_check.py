#!/usr/bin/env python3
"""Cross-check kevald-compile's kernel report against the CUDA driver.

Run on a GPU host (no third-party Python packages needed: ctypes only):

    LD_LIBRARY_PATH=/usr/local/cuda/lib64:$BUNDLE \\
        python3 tests/compile/gpu_check.py BUILD/worker/kevald-compile

It starts the worker (--no-sandbox is not used: the real confinement),
compiles a few kernels with known layouts (CUDA C++ and the PTX fixture),
loads every CUBIN with cuModuleLoadData and compares, per kernel:

  params                 == cuFuncGetParamInfo (offset, size) for every index
  registers              == CU_FUNC_ATTRIBUTE_NUM_REGS
  shared_static          == CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  local                  == CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
  max_threads_per_block  >= CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
                            (the driver also caps by register use)

Prints one line per kernel and "gpu_check: N kernels, M mismatches".
Exit 0 when all agree, 1 on a mismatch, 77 without a usable GPU.
"""
import ctypes
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

SOURCES = {
    "layouts": r'''
struct S { double a; int b; char c[12]; };
struct Big { float v[64]; };
extern "C" __global__ void __launch_bounds__(256) k1(float *p, int n, double d, char c, S s)
{
  __shared__ float sm[64];
  int i = threadIdx.x;
  sm[i % 64] = p[i] * d + c + s.a + s.b;
  __syncthreads();
  if (i < n) p[i] = sm[(i + 1) % 64];
}
extern "C" __global__ void noparams() { }
__device__ __noinline__ float dev(float x, int n)
{ float a[32]; for (int i = 0; i < 32; i++) a[i] = x * i; return a[n & 31]; }
extern "C" __global__ void __launch_bounds__(128, 2) lb(float *p, int n)
{ p[threadIdx.x] = dev(p[0], n); }
extern "C" __global__ void big(Big b, float *o) { o[threadIdx.x] = b.v[threadIdx.x & 63]; }
extern "C" __global__ void mixed(char a, short b, long long c, char d, float4 e) {
  if (a == 1 && b == 2 && c == 3 && d == 4 && e.x == 5) asm volatile("trap;"); }
''',
    "template": r'''
template <typename T, int N> __global__ void scale(T *x) { __shared__ T t[N * 32]; t[threadIdx.x] = x[threadIdx.x]; __syncthreads(); x[threadIdx.x] = t[(threadIdx.x + 1) % (N * 32)] * N; }
''',
    "spills": r'''
extern "C" __global__ void spill(float *p, int n) {
  float a[96];
  for (int i = 0; i < 96; i++) a[i] = p[i * n];
  float s = 0;
  for (int i = 0; i < 96; i++) s += a[(i * 7) % 96] * a[i];
  p[threadIdx.x] = s;
}
''',
}


def frame(ftype, obj, blob=b""):
    j = json.dumps(obj).encode()
    return struct.pack("<IIII", 0x3146564B, ftype, len(j), len(blob)) + j + blob


def read_frame(f):
    h = f.read(16)
    if len(h) < 16:
        raise SystemExit("gpu_check: the worker closed its output")
    _, ftype, jl, bl = struct.unpack("<IIII", h)
    return ftype, json.loads(f.read(jl)), f.read(bl)


def compile_all(worker, arch):
    p = subprocess.Popen([worker], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    ftype, hello, _ = read_frame(p.stdout)
    assert ftype == 1 and hello["role"] == "compile", hello
    jobs = [
        ("layouts", "cuda", SOURCES["layouts"].encode(), [], ["-std=c++17"]),
        ("template", "cuda", SOURCES["template"].encode(), ["scale<float, 4>", "scale<double, 2>"], []),
        ("spills", "cuda", SOURCES["spills"].encode(), [], ["-maxrregcount=16"]),
        ("ptx", "ptx", open(os.path.join(HERE, "vadd.ptx"), "rb").read(), [], []),
    ]
    out = []
    for i, (name, lang, src, names, opts) in enumerate(jobs):
        job = {"id": i, "language": lang, "arch": arch, "options": opts, "name_expressions": names,
               "deadline_ms": 30000}
        p.stdin.write(frame(2, job, src))
        p.stdin.flush()
        ftype, res, cubin = read_frame(p.stdout)
        if not res.get("ok"):
            raise SystemExit("gpu_check: %s did not compile: %s" % (name, res.get("log")))
        print("compiled %-8s in %.1f ms: %d kernel(s)" % (name, res["compile_ms"], len(res["kernels"])))
        out.append((name, res, cubin))
    p.stdin.close()
    p.wait()
    return out


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        print("gpu_check: no driver (%s): skipped" % e)
        return 77
    dev = ctypes.c_int()
    ctx = ctypes.c_void_p()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        print("gpu_check: cuInit/cuDeviceGet failed: skipped")
        return 77
    major, minor = ctypes.c_int(), ctypes.c_int()
    cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
    cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
    arch = "sm_%d%d%s" % (major.value, minor.value, "a" if major.value >= 9 else "")
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    print("device sm_%d%d, compiling for %s" % (major.value, minor.value, arch))

    mismatches = checked = 0
    for name, res, cubin in compile_all(sys.argv[1], arch):
        mod = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(cubin, len(cubin))
        r = cuda.cuModuleLoadData(ctypes.byref(mod), buf)
        if r != 0:
            print("%s: cuModuleLoadData failed (%d)" % (name, r))
            mismatches += 1
            continue
        for k in res["kernels"]:
            fn = ctypes.c_void_p()
            if cuda.cuModuleGetFunction(ctypes.byref(fn), mod, k["name"].encode()) != 0:
                print("%s: kernel %s not in the module" % (name, k["name"]))
                mismatches += 1
                continue
            params = []
            while True:
                off, size = ctypes.c_size_t(), ctypes.c_size_t()
                if cuda.cuFuncGetParamInfo(fn, ctypes.c_size_t(len(params)), ctypes.byref(off),
                                           ctypes.byref(size)) != 0:
                    break
                params.append({"offset": off.value, "size": size.value})

            def attr(a):
                v = ctypes.c_int()
                cuda.cuFuncGetAttribute(ctypes.byref(v), a, fn)
                return v.value

            drv = {"registers": attr(4), "shared_static": attr(1), "local": attr(3),
                   "max_threads": attr(0)}
            bad = []
            if params != k["params"]:
                bad.append("params %s != driver %s" % (k["params"], params))
            for key in ("registers", "shared_static", "local"):
                if k[key] != drv[key]:
                    bad.append("%s %d != driver %d" % (key, k[key], drv[key]))
            if k["max_threads_per_block"] < drv["max_threads"]:
                bad.append("max_threads_per_block %d < driver %d" % (k["max_threads_per_block"],
                                                                      drv["max_threads"]))
            checked += 1
            mismatches += bool(bad)
            print("%-4s %-8s %-26s regs %3d smem %5d local %4d spills %d/%d maxthr %4d (driver %4d) params %d%s"
                  % ("BAD" if bad else "ok", name, k["name"], k["registers"], k["shared_static"],
                     k["local"], k["spill_stores"], k["spill_loads"], k["max_threads_per_block"],
                     drv["max_threads"], len(params), (": " + "; ".join(bad)) if bad else ""))
        cuda.cuModuleUnload(mod)
    print("gpu_check: %d kernels, %d mismatches" % (checked, mismatches))
    return 1 if mismatches or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
