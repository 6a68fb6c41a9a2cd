#!/usr/bin/env python3
"""Generate a throughput corpus: kernels for level-1 library tasks, mixed like
an early RL run (about 60% compile and run correctly at varied speeds, 40%
fail: compile errors, wrong answers, runtime errors, plan mismatches and a few
timeouts).

Every submission names a library task ("task") and follows that task's
buffers and params exactly; bench/throughput/run.py may swap the task for an
inline copy with the large default shape set removed (--shapes small).

Output: one JSON file, {"generator", "seed", "count", "items": [{"id",
"task", "family", "category", "variant", "expect", "submission"}]} where
`expect` is the verdict the kernel is written to get in mode "full"
(correct, incorrect, runtime_error, timeout, compile_error, rejected) and
`expect_compile` is what mode "compile" should answer with the task and
plan kept (compiled, compile_error, or rejected: the plan is checked
against the CUBIN before a GPU is needed).

Python 3 standard library only.
"""
import argparse
import json
import random
import sys

# ---------------------------------------------------------------- tasks

# Elementwise activations: y = f(v) for v = x[i]; args x, y, u64 n = B * D.
ELEMENTWISE = {
    "l1_19_relu": "v > 0.0f ? v : 0.0f",
    "l1_20_leakyrelu": "v >= 0.0f ? v : 0.01f * v",
    "l1_21_sigmoid": "1.0f / (1.0f + expf(-v))",
    "l1_22_tanh": "tanhf(v)",
    "l1_25_swish": "v / (1.0f + expf(-v))",
    "l1_26_gelu": "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))",
    "l1_27_selu": "1.0507009873554804934f * (v > 0.0f ? v : 1.6732632423543772848f * expm1f(v))",
    "l1_28_hardsigmoid": "fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f",
    "l1_29_softplus": "v > 20.0f ? v : log1pf(expf(v))",
    "l1_30_softsign": "v / (1.0f + fabsf(v))",
    "l1_31_elu": "v > 0.0f ? v : expm1f(v)",
    "l1_32_hardtanh": "fminf(fmaxf(v, -1.0f), 1.0f)",
    "l1_88_mingptnewgelu": "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))",
}

# Reductions over dim 1 of x[B, D1, D2]: args x, y, i32 B, i32 D1, i32 D2.
# (kind, output C type)
DIMREDUCE = {
    "l1_47_sum_reduction_over_a_dimension": ("sum", "float"),
    "l1_48_mean_reduction_over_a_dimension": ("mean", "float"),
    "l1_49_max_reduction_over_a_dimension": ("max", "float"),
    "l1_53_min_reduction_over_a_dimension": ("min", "float"),
    "l1_51_argmax_over_a_dimension": ("argmax", "long long"),
    "l1_52_argmin_over_a_dimension": ("argmin", "long long"),
}

# Row-wise ops on x[B, D]: args x, y, i64 D; one block per row.
ROWWISE = {
    "l1_23_softmax": "softmax",
    "l1_24_logsoftmax": "logsoftmax",
    "l1_38_l1norm": "l1norm",
    "l1_39_l2norm": "l2norm",
}

# Mean-reduced losses over p[B, D], t[B, D] to a scalar loss: elementwise term.
LOSSES = {
    "l1_94_mseloss": "(pv - tv) * (pv - tv)",
    "l1_96_huberloss": "(fabs(pv - tv) < 1.0 ? 0.5 * (pv - tv) * (pv - tv) : fabs(pv - tv) - 0.5)",
}

# Verdict mix (fractions of the corpus), like an early RL run.
MIX = [
    ("correct", 0.60),
    ("compile_error", 0.13),
    ("incorrect", 0.14),
    ("runtime_error", 0.08),
    ("rejected", 0.04),
    ("timeout", 0.01),
]


def u64(expr):
    return {"type": "u64", "value": expr}


def i32(expr):
    return {"type": "i32", "value": expr}


def i64(expr):
    return {"type": "i64", "value": expr}


# ---------------------------------------------------------------- compile errors

def break_source(src, how, rng):
    """Turn a correct source into one that NVRTC refuses."""
    if how == "missing_semicolon":
        # drop the semicolon of the last statement that has one
        idx = src.rfind(";")
        return src[:idx] + src[idx + 1:]
    if how == "undeclared_identifier":
        return src.replace("{\n", "{\n        float unused_%d = undeclared_value_%d * 2.0f;\n" % (rng.randrange(1000), rng.randrange(1000)), 1)
    if how == "type_error":
        return src.replace("{\n", "{\n        float* bad_ptr = 3.5f;\n", 1)
    if how == "keyword_typo":
        return src.replace("__global__", "__globl__", 1)
    if how == "missing_brace":
        idx = src.rfind("}")
        return src[:idx] + src[idx + 1:]
    if how == "bad_call":
        return src.replace("{\n", "{\n        __syncthreads(42);\n", 1)
    raise ValueError(how)


COMPILE_ERRORS = ["missing_semicolon", "undeclared_identifier", "type_error",
                  "keyword_typo", "missing_brace", "bad_call"]


# ---------------------------------------------------------------- elementwise

def gen_elementwise(task, f, category, rng):
    name = "k_" + task.split("_", 2)[2]
    n = "B * D"
    bs = rng.choice([128, 256, 512])
    sig = 'extern "C" __global__ void %s(const float* __restrict__ x, float* __restrict__ y, unsigned long long n)' % name
    args = ["x", "y", u64(n)]

    def naive(cond="i < n", expr=f, pre=""):
        src = sig + "\n{\n" + pre + \
            "        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n" \
            "        if (%s) {\n                float v = x[i];\n                y[i] = %s;\n        }\n}\n" % (cond, expr)
        return src, [{"kernel": name, "grid": ["ceil_div(%s, %d)" % (n, bs)], "block": [bs], "args": args}]

    def gridstride(gmax, expr=f, load="x[i]"):
        src = sig + "\n{\n" \
            "        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n" \
            "        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {\n" \
            "                float v = %s;\n                y[i] = %s;\n        }\n}\n" % (load, expr)
        return src, [{"kernel": name, "grid": ["min(ceil_div(%s, %d), %d)" % (n, bs, gmax)], "block": [bs], "args": args}]

    def vec4(tail=True):
        body = (
            "        unsigned long long q = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
            "        unsigned long long i = q * 4;\n"
            "        if (i + 3 < n) {\n"
            "                float4 a = reinterpret_cast<const float4*>(x)[q];\n"
            "                float4 r;\n"
            "                { float v = a.x; r.x = %s; }\n"
            "                { float v = a.y; r.y = %s; }\n"
            "                { float v = a.z; r.z = %s; }\n"
            "                { float v = a.w; r.w = %s; }\n"
            "                reinterpret_cast<float4*>(y)[q] = r;\n"
            "        }" % (f, f, f, f))
        if tail:
            body += (" else {\n"
                     "                for (; i < n; i++) {\n"
                     "                        float v = x[i];\n"
                     "                        y[i] = %s;\n"
                     "                }\n"
                     "        }\n" % f)
        else:
            body += "\n"
        src = sig + "\n{\n" + body + "}\n"
        return src, [{"kernel": name, "grid": ["ceil_div(ceil_div(%s, 4), %d)" % (n, bs)], "block": [bs], "args": args}]

    def chunked(chunk):
        # correct but slow: each thread walks a contiguous chunk (uncoalesced)
        src = sig + "\n{\n" \
            "        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n" \
            "        unsigned long long lo = t * %dull;\n" \
            "        unsigned long long hi = lo + %dull < n ? lo + %dull : n;\n" \
            "        for (unsigned long long i = lo; i < hi; i++) {\n" \
            "                float v = x[i];\n                y[i] = %s;\n        }\n}\n" % (chunk, chunk, chunk, f)
        return src, [{"kernel": name, "grid": ["ceil_div(ceil_div(%s, %d), 64)" % (n, chunk)], "block": [64], "args": args}]

    def fewthreads():
        # correct but slow: 8 blocks of 32 threads stride over everything
        src, _ = gridstride(8)
        return src, [{"kernel": name, "grid": [8], "block": [32], "args": args}]

    if category == "correct":
        v = rng.choice(["naive", "gridstride", "vec4", "chunked", "fewthreads"])
        if v == "naive":
            src, plan = naive()
        elif v == "gridstride":
            src, plan = gridstride(rng.choice([1024, 4096, 65535]))
        elif v == "vec4":
            src, plan = vec4()
        elif v == "chunked":
            src, plan = chunked(rng.choice([16, 64]))
        else:
            src, plan = fewthreads()
    elif category == "incorrect":
        v = rng.choice(["off_by_one", "wrong_formula", "vec4_no_tail", "no_grid_stride"])
        if v == "off_by_one":
            src, plan = naive(cond="i + 1 < n")
        elif v == "wrong_formula":
            src, plan = naive(expr="(%s) + 0.01f" % f)
        elif v == "vec4_no_tail":
            src, plan = vec4(tail=False)
        else:
            # a fixed grid without the stride loop: covers only the first 1024*bs elements
            src, plan = naive()
            plan[0]["grid"] = [1024]
    elif category == "runtime_error":
        v = rng.choice(["oob_far_read", "trap"])
        if v == "oob_far_read":
            src, plan = gridstride(4096, load="x[i + (1ull << 38)]")
        else:
            src, plan = naive(pre="        if (blockIdx.x == gridDim.x / 2 && threadIdx.x == 0)\n                __trap();\n")
    elif category == "timeout":
        v = "spin_on_input"
        src, plan = naive(pre="        volatile const float* vx = x;\n        while (vx[0] == vx[0]) {\n        }\n")
    elif category == "rejected":
        v = rng.choice(["arg_size", "arg_count"])
        src, plan = naive()
        if v == "arg_size":
            src = src.replace("unsigned long long n)", "int n)")
            src = src.replace("if (i < n)", "if (i < (unsigned long long)n)")
        else:
            plan[0]["args"] = ["x", "y"]
    elif category == "compile_error":
        v = rng.choice(COMPILE_ERRORS)
        src, plan = rng.choice([naive, lambda: gridstride(4096)])()
        src = break_source(src, v, rng)
    else:
        raise ValueError(category)
    return v, src, plan


# ---------------------------------------------------------------- reductions over dim 1

def gen_dimreduce(task, kind, category, rng):
    op, otype = kind
    name = "k_" + op + "_dim1"
    bs = rng.choice([64, 128, 256])
    sig = 'extern "C" __global__ void %s(const float* __restrict__ x, %s* __restrict__ y, int B, int D1, int D2)' % (name, otype)
    args = ["x", "y", i32("B"), i32("D1"), i32("D2")]
    plan = [{"kernel": name, "grid": ["ceil_div(D2, %d)" % bs, "B"], "block": [bs], "args": args}]

    def body(start="0", end="D1", load="p[(unsigned long long)i * D2]", unroll=None, pre="", twice=False):
        if op in ("sum", "mean"):
            init, step, fin = "float acc = 0.0f;", "acc += v;", ("acc" if op == "sum" else "acc / (float)D1")
            first = start
        elif op in ("max", "min"):
            fn = "fmaxf" if op == "max" else "fminf"
            init, step, fin = "float acc = p[0];", "acc = %s(acc, v);" % fn, "acc"
            first = "1" if start == "0" else start
        else:
            cmp = ">" if op == "argmax" else "<"
            init = "float best = p[0];\n        long long acc = 0;"
            step = "if (v %s best) {\n                        best = v;\n                        acc = i;\n                }" % cmp
            fin = "acc"
            first = "1" if start == "0" else start
        loop = ""
        if unroll:
            loop += "#pragma unroll %d\n" % unroll
        loop += ("        for (int i = %s; i < %s; i++) {\n"
                 "                float v = %s;\n"
                 "                %s\n"
                 "        }\n" % (first, end, load, step))
        s = (sig + "\n{\n" + pre +
             "        int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
             "        int b = blockIdx.y;\n"
             "        if (j >= D2)\n                return;\n"
             "        const float* p = x + (unsigned long long)b * D1 * D2 + j;\n"
             "        " + init + "\n" + loop)
        if twice:
            # deliberately slow: the whole reduction again, the result kept only if equal
            s += ("        %s keep = acc;\n" % otype)
            s += "        {\n        " + init.replace("float acc", "float acc2").replace("long long acc", "long long acc2").replace("best", "best2") + "\n"
            s += loop.replace("acc", "acc2").replace("best", "best2")
            s += "        if (acc2 != keep)\n                acc = acc2;\n        }\n"
        s += "        y[(unsigned long long)b * D2 + j] = %s;\n}\n" % fin
        return s

    if category == "correct":
        v = rng.choice(["naive", "unroll4", "twice"])
        src = body(unroll=4 if v == "unroll4" else None, twice=(v == "twice"))
    elif category == "incorrect":
        if op in ("sum", "mean"):
            # one term missing: off by about one standard deviation
            v = rng.choice(["skip_first", "off_by_one"])
            src = body(start="1") if v == "skip_first" else body(end="D1 - 1")
        else:
            # (an off-by-one range would often still find the same extremum)
            v = rng.choice(["half_range", "wrong_comparison"])
            if v == "half_range":
                src = body(end="D1 / 2")
            else:
                op = {"max": "min", "min": "max", "argmax": "argmin", "argmin": "argmax"}[op]
                src = body()
    elif category == "runtime_error":
        v = rng.choice(["oob_far_read", "trap"])
        if v == "oob_far_read":
            src = body(load="p[(unsigned long long)i * D2 + (1ull << 38)]")
        else:
            src = body(pre="        if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)\n                __trap();\n")
    elif category == "timeout":
        v = "spin_on_input"
        src = body(pre="        volatile const float* vx = x;\n        while (vx[0] == vx[0]) {\n        }\n")
    elif category == "rejected":
        v = rng.choice(["arg_count", "arg_size"])
        src = body()
        plan = json.loads(json.dumps(plan))
        if v == "arg_count":
            plan[0]["args"] = ["x", "y", i32("D1"), i32("D2")]
        else:
            plan[0]["args"][2] = i64("B")
    elif category == "compile_error":
        v = rng.choice(COMPILE_ERRORS)
        src = break_source(body(), v, rng)
    else:
        raise ValueError(category)
    return v, src, plan


# ---------------------------------------------------------------- row-wise

ROW_HELPERS = r'''
__device__ static float block_reduce(float v, float* sh, bool is_max)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]) : sh[threadIdx.x] + sh[threadIdx.x + s];
                __syncthreads();
        }
        float r = sh[0];
        __syncthreads();
        return r;
}
'''

ROW_HELPERS_SHFL = r'''
__device__ static float warp_reduce(float v, bool is_max)
{
        for (int o = 16; o > 0; o >>= 1) {
                float w = __shfl_xor_sync(0xffffffffu, v, o);
                v = is_max ? fmaxf(v, w) : v + w;
        }
        return v;
}

__device__ static float block_reduce(float v, float* sh, bool is_max)
{
        v = warp_reduce(v, is_max);
        if ((threadIdx.x & 31) == 0)
                sh[threadIdx.x >> 5] = v;
        __syncthreads();
        int nw = blockDim.x >> 5;
        float r = threadIdx.x < nw ? sh[threadIdx.x] : (is_max ? -3.0e38f : 0.0f);
        if (threadIdx.x < 32)
                r = warp_reduce(r, is_max);
        if (threadIdx.x == 0)
                sh[0] = r;
        __syncthreads();
        r = sh[0];
        __syncthreads();
        return r;
}
'''


def gen_rowwise(task, op, category, rng):
    name = "k_" + op
    bs = rng.choice([256, 512, 1024])
    args = ["x", "y", i64("D")]
    plan = [{"kernel": name, "grid": ["B"], "block": [bs], "args": args}]

    def body(end="D", load="row[i]", pre="", shfl=False, wrong=False):
        helpers = ROW_HELPERS_SHFL if shfl else ROW_HELPERS
        s = helpers + ('\nextern "C" __global__ void %s(const float* __restrict__ x, float* __restrict__ y, long long D)\n{\n' % name)
        s += "        __shared__ float sh[1024];\n" + pre
        s += "        const float* row = x + (unsigned long long)blockIdx.x * D;\n"
        s += "        float* out = y + (unsigned long long)blockIdx.x * D;\n"
        if op in ("softmax", "logsoftmax"):
            s += "        float m = -3.0e38f;\n"
            s += "        for (long long i = threadIdx.x; i < %s; i += blockDim.x)\n                m = fmaxf(m, %s);\n" % (end, load)
            s += "        m = block_reduce(m, sh, true);\n"
            s += "        float sum = 0.0f;\n"
            s += "        for (long long i = threadIdx.x; i < %s; i += blockDim.x)\n                sum += expf(row[i] - m);\n" % end
            s += "        sum = block_reduce(sum, sh, false);\n"
            if op == "softmax":
                fin = "expf(row[i] - m) / sum" if not wrong else "expf(row[i] - m) / (sum * 1.01f)"
            else:
                fin = "row[i] - m - logf(sum)" if not wrong else "row[i] - m - sum"
        else:
            term = "fabsf(%s)" % load if op == "l1norm" else "%s * %s" % (load, load)
            s += "        float a = 0.0f;\n"
            s += "        for (long long i = threadIdx.x; i < %s; i += blockDim.x)\n                a += %s;\n" % (end, term)
            s += "        a = block_reduce(a, sh, false);\n"
            if op == "l1norm":
                fin = "row[i] * ((float)D / a)" if not wrong else "row[i] / a"
            else:
                fin = "row[i] * rsqrtf(a)" if not wrong else "row[i] / a"
        s += "        for (long long i = threadIdx.x; i < D; i += blockDim.x)\n                out[i] = %s;\n}\n" % fin
        return s

    if category == "correct":
        v = rng.choice(["smem_tree", "warp_shuffle", "narrow_block"])
        src = body(shfl=(v == "warp_shuffle"))
        if v == "narrow_block":
            plan[0]["block"] = [32]
    elif category == "incorrect":
        v = rng.choice(["off_by_one", "wrong_formula"])
        src = body(end="D - 1") if v == "off_by_one" else body(wrong=True)
    elif category == "runtime_error":
        v = rng.choice(["oob_far_read", "trap"])
        if v == "oob_far_read":
            src = body(load="row[i + (1ll << 38)]")
        else:
            src = body(pre="        if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)\n                __trap();\n")
    elif category == "timeout":
        v = "spin_on_input"
        src = body(pre="        volatile const float* vx = x;\n        while (vx[0] == vx[0]) {\n        }\n")
    elif category == "rejected":
        v = rng.choice(["arg_size", "arg_count"])
        src = body()
        if v == "arg_size":
            plan[0]["args"] = ["x", "y", i32("D")]
        else:
            plan[0]["args"] = ["x", "y", i64("D"), i64("B")]
    elif category == "compile_error":
        v = rng.choice(COMPILE_ERRORS)
        src = break_source(body(), v, rng)
    else:
        raise ValueError(category)
    return v, src, plan


# ---------------------------------------------------------------- losses

def gen_loss(task, term, category, rng):
    n = "B * D"
    sig1 = ('extern "C" __global__ void k_loss(const float* __restrict__ p, const float* __restrict__ t, '
            'float* __restrict__ loss, unsigned long long n)')

    def one_block(bs, start="0", end="n", load_p="p[i]", pre="", divisor="(double)n"):
        s = sig1 + "\n{\n" + pre
        s += "        __shared__ double sh[%d];\n" % bs
        s += "        double a = 0.0;\n"
        s += "        for (unsigned long long i = %s + threadIdx.x; i < %s; i += %d) {\n" % (start, end, bs)
        s += "                double pv = %s;\n                double tv = t[i];\n                a += %s;\n        }\n" % (load_p, term)
        s += "        sh[threadIdx.x] = a;\n        __syncthreads();\n"
        s += "        for (int k = %d; k > 0; k >>= 1) {\n                if (threadIdx.x < k)\n                        sh[threadIdx.x] += sh[threadIdx.x + k];\n                __syncthreads();\n        }\n" % (bs // 2)
        s += "        if (threadIdx.x == 0)\n                loss[0] = (float)(sh[0] / %s);\n}\n" % divisor
        return s, [{"kernel": "k_loss", "grid": [1], "block": [bs], "args": ["p", "t", "loss", u64(n)]}], []

    def two_kernel(grid):
        s = ('extern "C" __global__ void k_partial(const float* __restrict__ p, const float* __restrict__ t, '
             'double* __restrict__ part, unsigned long long n)\n{\n'
             "        __shared__ double sh[256];\n"
             "        double a = 0.0;\n"
             "        for (unsigned long long i = (unsigned long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (unsigned long long)gridDim.x * 256) {\n"
             "                double pv = p[i];\n                double tv = t[i];\n                a += %s;\n        }\n"
             "        sh[threadIdx.x] = a;\n        __syncthreads();\n"
             "        for (int k = 128; k > 0; k >>= 1) {\n                if (threadIdx.x < k)\n                        sh[threadIdx.x] += sh[threadIdx.x + k];\n                __syncthreads();\n        }\n"
             "        if (threadIdx.x == 0)\n                part[blockIdx.x] = sh[0];\n}\n\n"
             'extern "C" __global__ void k_final(const double* __restrict__ part, int m, unsigned long long n, float* __restrict__ loss)\n{\n'
             "        if (threadIdx.x != 0)\n                return;\n"
             "        double a = 0.0;\n"
             "        for (int i = 0; i < m; i++)\n                a += part[i];\n"
             "        loss[0] = (float)(a / (double)n);\n}\n" % term)
        plan = [{"kernel": "k_partial", "grid": [grid], "block": [256], "args": ["p", "t", "part", u64(n)]},
                {"kernel": "k_final", "grid": [1], "block": [32], "args": ["part", i32(str(grid)), u64(n), "loss"]}]
        return s, plan, [{"name": "part", "dtype": "f64", "count": str(grid)}]

    scratch = []
    if category == "correct":
        v = rng.choice(["one_block", "two_kernel", "narrow_block"])
        if v == "one_block":
            src, plan, scratch = one_block(rng.choice([256, 512, 1024]))
        elif v == "two_kernel":
            src, plan, scratch = two_kernel(rng.choice([132, 264, 1024]))
        else:
            src, plan, scratch = one_block(32)
    elif category == "incorrect":
        v = rng.choice(["off_by_one", "wrong_divisor"])
        if v == "off_by_one":
            src, plan, scratch = one_block(256, end="n - 1")
        else:
            src, plan, scratch = one_block(256, divisor="(double)(n / 2)")
    elif category == "runtime_error":
        v = rng.choice(["oob_far_read", "trap"])
        if v == "oob_far_read":
            src, plan, scratch = one_block(256, load_p="p[i + (1ull << 38)]")
        else:
            src, plan, scratch = one_block(256, pre="        if (threadIdx.x == 7)\n                __trap();\n")
    elif category == "timeout":
        v = "spin_on_input"
        src, plan, scratch = one_block(256, pre="        volatile const float* vp = p;\n        while (vp[0] == vp[0]) {\n        }\n")
    elif category == "rejected":
        v = rng.choice(["arg_size", "arg_count"])
        src, plan, scratch = one_block(256)
        if v == "arg_size":
            plan[0]["args"][3] = i32(n)
        else:
            plan[0]["args"] = ["p", "t", "loss"]
    elif category == "compile_error":
        v = rng.choice(COMPILE_ERRORS)
        src, plan, scratch = one_block(256)
        src = break_source(src, v, rng)
    else:
        raise ValueError(category)
    return v, src, plan, scratch


# ---------------------------------------------------------------- driver

def task_list():
    out = []
    for t, f in ELEMENTWISE.items():
        out.append((t, "elementwise", f))
    for t, k in DIMREDUCE.items():
        out.append((t, "dimreduce", k))
    for t, k in ROWWISE.items():
        out.append((t, "rowwise", k))
    for t, k in LOSSES.items():
        out.append((t, "loss", k))
    return out


def build(count, seed, timing):
    rng = random.Random(seed)
    tasks = task_list()
    # exact category counts, then shuffled
    cats = []
    for c, frac in MIX:
        if c != "correct":
            cats += [c] * max(int(round(count * frac)), 1 if count >= 100 else 0)
    cats = cats[:count]
    cats += ["correct"] * (count - len(cats))
    rng.shuffle(cats)
    items = []
    for k, cat in enumerate(cats):
        task, family, info = tasks[k % len(tasks)]
        scratch = []
        if family == "elementwise":
            v, src, plan = gen_elementwise(task, info, cat, rng)
        elif family == "dimreduce":
            v, src, plan = gen_dimreduce(task, info, cat, rng)
        elif family == "rowwise":
            v, src, plan = gen_rowwise(task, info, cat, rng)
        else:
            v, src, plan, scratch = gen_loss(task, info, cat, rng)
        # a distinct source per sample (RL samples rarely repeat byte for byte)
        src = "// corpus sample %d: %s, %s/%s\n" % (k, task, cat, v) + src
        sub = {"task": task, "source": src, "plan": plan, "timing": timing,
               "tags": {"run_id": "throughput-corpus", "sample": k,
                        "labels": {"category": cat, "variant": v}}}
        if scratch:
            sub["scratch"] = scratch
        items.append({"id": k, "task": task, "family": family, "category": cat, "variant": v,
                      "expect": cat,
                      "expect_compile": cat if cat in ("compile_error", "rejected") else "compiled",
                      "submission": sub})
    return {"generator": "bench/throughput/make_corpus.py", "seed": seed, "count": len(items),
            "tasks": sorted({t for t, _, _ in tasks}), "mix": dict(MIX), "items": items}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=320, help="number of kernels (default 320)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument("--timing", default="fast",
                    help='timing of every submission: "fast", "precise", or a JSON object (default fast)')
    ap.add_argument("-o", "--output", default="corpus.json", help="output file (default corpus.json; - for stdout)")
    a = ap.parse_args()
    if a.count < 1 or a.count > 100000:
        ap.error("--count must be in 1..100000")
    timing = a.timing
    if timing not in ("fast", "precise"):
        try:
            timing = json.loads(timing)
        except ValueError as e:
            ap.error("--timing: not fast, precise or JSON: %s" % e)
    corpus = build(a.count, a.seed, timing)
    text = json.dumps(corpus, indent=1)
    if a.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(a.output, "w") as fh:
            fh.write(text + "\n")
    counts = {}
    for it in corpus["items"]:
        counts[it["category"]] = counts.get(it["category"], 0) + 1
    print("wrote %d kernels over %d tasks to %s: %s" % (
        corpus["count"], len(corpus["tasks"]), a.output,
        ", ".join("%s %d" % (c, counts.get(c, 0)) for c, _ in MIX)), file=sys.stderr)


if __name__ == "__main__":
    main()
