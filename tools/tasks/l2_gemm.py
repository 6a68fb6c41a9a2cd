"""Level 2, GEMM-based problems: nn.Linear (a cuBLAS SGEMM step with TF32 off,
as PyTorch eager calls it) followed by direct epilogue kernels.

Categories: gemm_epilogue (elementwise ops after the GEMM, applied in place on
the GEMM's output), gemm_reduction (row reductions: sum, logsumexp, softmax),
gemm_norm (GroupNorm over the GEMM's output features).
"""
from l2_gen import make_task2, problem, HELPERS
from taskgen import buf, normal, uniform, launch, gemm, i32, u64, scratch

DEV = r'''
#define THREADS 256

__device__ static inline float sigmoid_f(float v) { return 1.0f / (1.0f + expf(-v)); }
__device__ static inline float mish_f(float v) { return v * tanhf(v > 20.0f ? v : log1pf(expf(v))); }
__device__ static inline float gelu_f(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }
__device__ static inline float leaky_f(float v, float s) { return v > 0.0f ? v : v * s; }
__device__ static inline float hardtanh_f(float v, float lo, float hi) { return fminf(fmaxf(v, lo), hi); }

__device__ static inline float block_max(float v, float* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
        }
        float r = sh[0];
        __syncthreads();
        return r;
}

__device__ static inline double block_sum(double v, double* sh)
{
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int s = THREADS / 2; s > 0; s >>= 1) {
                if (threadIdx.x < s)
                        sh[threadIdx.x] += sh[threadIdx.x + s];
                __syncthreads();
        }
        double r = sh[0];
        __syncthreads();
        return r;
}
'''

HELPERS["@@DEV@@"] = DEV

HEAD = r'''
// Reference for KernelBench level 2 problem {problem}.
// The GEMM (nn.Linear: x @ W^T + b) is a cuBLAS SGEMM library step of the plan
// with TF32 off, as PyTorch eager calls it; this file holds the epilogue:
// {what}
// PyTorch eager runs one kernel per op; fp32 elementwise math, reductions
// accumulated in double in a fixed order.
'''

EW = r'''
extern "C" __global__ void {kernel}(float* __restrict__ y, {params}unsigned long long total, int N)
{{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             i < total; i += stride) {{
                int j = (int)(i % (unsigned long long)N);
                float v = y[i]{plus_b};
{body}
                y[i] = v;
        }}
}}
'''

ROWSUM = r'''
extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ t,
        const float* __restrict__ b, float* __restrict__ y, int N)
{{
        __shared__ double shd[THREADS];
        const float* row = t + (unsigned long long)blockIdx.x * N;
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                s += (double)v;
        }}
        s = block_sum(s, shd);
        if (threadIdx.x == 0)
                y[blockIdx.x] = (float)s;
}}
'''

LSE = r'''
extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ t,
        const float* __restrict__ b, float* __restrict__ y, int N)
{{
        __shared__ float shf[THREADS];
        __shared__ double shd[THREADS];
        const float* row = t + (unsigned long long)blockIdx.x * N;
        float m = -__int_as_float(0x7f800000);
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                m = fmaxf(m, v);
        }}
        m = block_max(m, shf);
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                s += exp((double)v - (double)m);
        }}
        s = block_sum(s, shd);
        if (threadIdx.x == 0) {{
                float v = (float)((double)m + log(s));
{post}
                y[blockIdx.x] = v;
        }}
}}
'''

SOFTMAX = r'''
extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(float* __restrict__ y,
        const float* __restrict__ b, int N)
{{
        __shared__ float shf[THREADS];
        __shared__ double shd[THREADS];
        float* row = y + (unsigned long long)blockIdx.x * N;
        float m = -__int_as_float(0x7f800000);
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                m = fmaxf(m, v);
        }}
        m = block_max(m, shf);
        double s = 0.0;
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                s += exp((double)v - (double)m);
        }}
        s = block_sum(s, shd);
        for (int j = threadIdx.x; j < N; j += THREADS) {{
                float v = row[j] + b[j];
{body}
                row[j] = (float)(exp((double)v - (double)m) / s);
        }}
}}
'''

GN = r'''
// One warp per (row, group): blockIdx.y is the row, warp w of block x the
// group x * WARPS + w; the lanes stride over the group's features and the
// warp combines their sums with shuffles (fixed order), so a group of 16 or
// 32 features does not hold a 256-thread block and two block-wide trees.
#define WARPS (THREADS / 32)

__device__ static double warp_sum(double v)
{{
        for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
        return v;
}}

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(float* __restrict__ y,
        const float* __restrict__ b, {params}int N, int G)
{{
        int lane = threadIdx.x % 32;
        int g = blockIdx.x * WARPS + threadIdx.x / 32;
        if (g >= G)
                return;                 /* the whole warp: no block barrier below */
        int cnt = N / G;
        int j0 = g * cnt;
        float* row = y + (unsigned long long)blockIdx.y * N + j0;
        double s = 0.0;
        for (int c = lane; c < cnt; c += 32)
                s += (double)(row[c] + b[j0 + c]);
        double mean = warp_sum(s) / cnt;
        double q = 0.0;
        for (int c = lane; c < cnt; c += 32) {{
                double d = (double)(row[c] + b[j0 + c]) - mean;
                q += d * d;
        }}
        double var = warp_sum(q) / cnt;
        float rstd = (float)(1.0 / sqrt(var + 1e-5));
        float mf = (float)mean;
        for (int c = lane; c < cnt; c += 32) {{
                int j = j0 + c;
                float v = (row[c] + b[j] - mf) * rstd;
{body}
                row[c] = v;
                (void)j;
        }}
}}
'''

LIN = ("t = x @ W^T + b is the model's nn.Linear(K, N): x is [M, K], W is [N, K] (PyTorch's "
       "layout), b is [N]; all tensors are row-major fp32.")
LIN_NOBIAS = ("t = x @ W^T is the model's nn.Linear(K, N, bias=False): x is [M, K], W is [N, K] "
              "(PyTorch's layout); all tensors are row-major fp32.")
FP32 = "Accumulate the GEMM in fp32 (or better); TF32 is not accurate enough."
FP32_DAMPED = ("The reference's GEMM is fp32 (TF32 off); the reduction damps GEMM rounding, so "
               "only the output tolerance matters.")
REFNOTE = ("cuBLAS SGEMM with TF32 off (library step, as PyTorch eager calls nn.Linear), then a "
           "direct epilogue kernel (PyTorch eager runs a separate kernel per op)")
GELU = "gelu(v) = 0.5*v*(1 + erf(v/sqrt(2))) (exact, PyTorch's default)"
MISH = "mish(v) = v*tanh(softplus(v)), softplus(v) = log(1 + exp(v))"
SIG = "sigmoid(v) = 1/(1 + exp(-v))"


def indent(body, n=16):
    return "\n".join(" " * n + ln for ln in body.strip("\n").split("\n"))


def gemm_params(extra=None):
    p = {"M": "batch rows (batch_size)", "K": "in_features", "N": "out_features"}
    if extra:
        p.update(extra)
    return p


def gemm_shapes(num, kname="in_features", nname="out_features", small=None, tiny=None,
                extra=None):
    kp = problem(num)["params"]
    d = {"name": "default", "M": kp["batch_size"], "K": kp[kname], "N": kp[nname]}
    for k, v in (extra or {}).items():
        d[k] = kp[v] if isinstance(v, str) else v
    s = {"name": "small", "M": 257, "K": 1000, "N": 771}
    s.update(small or {})
    t = {"name": "tiny", "M": 5, "K": 33, "N": 7}
    t.update(tiny or {})
    return [d, s, t]


def xbuf(std):
    return buf("x", ["M", "K"], "in", init=normal(0.0, std))


def wbufs(bias=True, w="W", b="b", k="K", n="N"):
    out = [buf(w, [n, k], "in", init=uniform(-1, 1, fan_in=k))]
    if bias:
        out.append(buf(b, [n], "in", init=uniform(-1, 1, fan_in=k)))
    return out


def xinit_desc(std, why=""):
    s = ("x is normal(0, %g)" % std)
    if why:
        s += " (%s)" % why
    return (s + "; W and b are uniform(-1, 1)/sqrt(K) as PyTorch initializes nn.Linear "
            "(KernelBench's inputs are torch.rand).")


TOL_EW = ("t has std ~0.58*std(x) (W is fan_in-scaled); two correct fp32 GEMMs that "
          "accumulate in different orders differ by ~6e-8*sqrt(K)*|t| (~2e-6 at K = 8192 for "
          "std(x) = 1), and the epilogue's ops have derivatives of order 1, so 1e-4 (abs + "
          "rel) leaves a wide margin while TF32 tensor-core math (~2e-4 relative error per "
          "product sum) and skipping any op fail.")


def ew_task(num, cat, title, ops_desc, body, *, std=1.0, std_why="", kname="in_features",
            nname="out_features", extras=(), bias=True, tol=None, tol_note=None):
    """Elementwise epilogue: GEMM into y, then one in-place kernel."""
    p = problem(num)
    kernel = "epilogue_ref"
    params_c = ("const float* __restrict__ b, " if bias else "")
    for e in extras:
        params_c += "const float* __restrict__ %s, " % e[0]
    src = (HEAD.format(problem=p["problem"], what=ops_desc) + "@@DEV@@" +
           EW.format(kernel=kernel, params=params_c, plus_b=" + b[j]" if bias else "",
                     body=indent(body)))
    bufs = [xbuf(std)] + wbufs(bias)
    edesc = ""
    for name, init, d in extras:
        bufs.append(buf(name, ["N"], "in", init=init))
        edesc += " " + d
    bufs.append(buf("y", ["M", "N"], "out"))
    args = ["y"] + (["b"] if bias else []) + [e[0] for e in extras] + [u64("M * N"), i32("N")]
    plan = [gemm("x", "W", "y", "M", "N", "K", trans_b=True),
            launch(kernel, ["min(ceil_div(M * N, 256), 1048576)"], [256], args)]
    desc = ("%s Then, elementwise with v = t[i, j]: %s y = v, [M, N].%s %s %s" % (
        LIN if bias else LIN_NOBIAS, ops_desc, edesc, xinit_desc(std, std_why), FP32))
    nb = (" + N" if bias else "") + " + N" * len(extras)
    return make_task2(num, cat, title, desc, gemm_params(), gemm_shapes(num, kname, nname),
                      bufs, src, plan, tolerance=tol, tolerance_note=tol_note or TOL_EW,
                      flops="2 * M * N * K", bytes_="4 * (M * K + N * K + M * N%s)" % nb,
                      reference_note=REFNOTE)


def elementwise():
    T = []
    T.append(ew_task(9, "gemm_epilogue", "Linear, subtract, multiply, ReLU",
                     "v = relu((v - 2.0) * 1.5).",
                     "v = fmaxf((v - 2.0f) * 1.5f, 0.0f);", std=6.0,
                     std_why="KernelBench's torch.rand inputs make t - 2.0 negative everywhere "
                     "and the output all zeros; std 6 gives t a std of ~3.5, so ~30% of the "
                     "outputs are positive",
                     tol={"atol": 3e-4, "rtol": 1e-4},
                     tol_note=("t has std ~3.5 (x is normal(0, 6), W fan_in-scaled); two correct "
                               "fp32 GEMMs that accumulate in different orders differ by "
                               "~6e-8*sqrt(K)*|t| (~2e-5 at K = 8192), 1.5x after the multiply; "
                               "outputs near 0 have no relative slack, so atol is 3e-4 (a numpy "
                               "fp32 GEMM reaches 0.15 of the tolerance at the default size, "
                               "TF32 exceeds it ~20x). ~70% of the outputs are 0: an all-zero "
                               "output still fails on the rest.")))
    T.append(ew_task(12, "gemm_epilogue", "Linear, multiply, LeakyReLU",
                     "v = v * 2.0, then leaky_relu(v, negative_slope=0.1) (v if v > 0 else 0.1*v).",
                     "v = v * 2.0f;\nv = leaky_f(v, 0.1f);"))
    T.append(ew_task(29, "gemm_epilogue", "Linear, Mish, Mish",
                     "v = mish(mish(v)) with %s." % MISH,
                     "v = mish_f(v);\nv = mish_f(v);", std=2.0))
    T.append(ew_task(40, "gemm_epilogue", "Linear, scaling, residual add",
                     "v = v * 0.5 + v (the model scales a copy by 0.5 and adds the unscaled "
                     "GEMM output back).",
                     "v = v * 0.5f + v;"))
    T.append(ew_task(53, "gemm_epilogue", "Linear, scaling, Hardtanh, GELU",
                     "v = v * 0.5, hardtanh to [-2, 2], then %s." % GELU,
                     "v = v * 0.5f;\nv = hardtanh_f(v, -2.0f, 2.0f);\nv = gelu_f(v);", std=4.0,
                     std_why="so that the hardtanh clamps some outputs"))
    T.append(ew_task(59, "gemm_epilogue", "Linear, Swish, scaling",
                     "v = v * sigmoid(v) * 2.0 with %s." % SIG,
                     "v = v * sigmoid_f(v);\nv = v * 2.0f;", std=2.0))
    T.append(ew_task(63, "gemm_epilogue", "Linear, ReLU, divide",
                     "v = relu(v) / 2.0.",
                     "v = fmaxf(v, 0.0f);\nv = v / 2.0f;"))
    T.append(ew_task(68, "gemm_epilogue", "Linear, min with a constant, subtract",
                     "v = min(v, 2.0) - 2.0 (the model's constant is a scalar parameter equal "
                     "to 2.0).",
                     "v = fminf(v, 2.0f);\nv = v - 2.0f;", std=4.0,
                     std_why="so that t exceeds the constant 2.0 for some outputs"))
    T.append(ew_task(70, "gemm_epilogue", "Linear, sigmoid, scaling, residual add",
                     "v = sigmoid(v) * 2.0 + v with %s." % SIG,
                     "v = sigmoid_f(v) * 2.0f + v;", kname="input_size", nname="hidden_size"))
    T.append(ew_task(76, "gemm_epilogue", "Linear without bias, add bias, ReLU",
                     "v = relu(v + bias[j]).",
                     "v = v + bias[j];\nv = fmaxf(v, 0.0f);", bias=False,
                     extras=[("bias", normal(0.0, 1.0),
                              "bias is [N], normal(0, 1) (the model's torch.randn parameter).")]))
    T.append(ew_task(81, "gemm_epilogue", "Linear, Swish, divide, clamp, tanh, clamp",
                     "v = v * sigmoid(v), v = v / 2.0, clamp to [-1, 1], tanh, clamp to [-1, 1] "
                     "(%s)." % SIG,
                     "v = v * sigmoid_f(v);\nv = v / 2.0f;\nv = fminf(fmaxf(v, -1.0f), 1.0f);\n"
                     "v = tanhf(v);\nv = fminf(fmaxf(v, -1.0f), 1.0f);", std=4.0,
                     std_why="so that the first clamp is active for some outputs"))
    T.append(ew_task(86, "gemm_epilogue", "Linear, divide, GELU",
                     "v = v / 10.0, then %s." % GELU,
                     "v = v / 10.0f;\nv = gelu_f(v);", std=10.0,
                     std_why="so that v / 10 is O(1), where GELU is not linear",
                     kname="input_size", nname="output_size"))
    T.append(ew_task(95, "gemm_epilogue", "Linear, add, Swish, tanh, GELU, Hardtanh",
                     "v = v + add_value[j], v = v * sigmoid(v), tanh, %s, hardtanh to [-1, 1]."
                     % GELU,
                     "v = v + add_value[j];\nv = v * sigmoid_f(v);\nv = tanhf(v);\n"
                     "v = gelu_f(v);\nv = hardtanh_f(v, -1.0f, 1.0f);", std=2.0,
                     extras=[("add_value", normal(0.0, 1.0),
                              "add_value is [N], normal(0, 1) (the model's torch.randn "
                              "parameter).")]))
    return T


def red_task(num, cat, title, kind, ops_desc, body, post="", *, std=1.0, std_why="",
             kname="in_features", nname="out_features", out_shape=("M", "1"), tol=None,
             tol_note=None, damped=False):
    """Row reduction over the GEMM output (sum / logsumexp / softmax)."""
    p = problem(num)
    kernel = {"rowsum": "rowsum_ref", "lse": "logsumexp_ref", "softmax": "softmax_ref"}[kind]
    if kind == "rowsum":
        k = ROWSUM.format(kernel=kernel, body=indent(body))
    elif kind == "lse":
        k = LSE.format(kernel=kernel, body=indent(body), post=indent(post, 16))
    else:
        k = SOFTMAX.format(kernel=kernel, body=indent(body))
    src = HEAD.format(problem=p["problem"], what=ops_desc) + "@@DEV@@" + k
    bufs = [xbuf(std)] + wbufs(True)
    if kind == "softmax":
        bufs.append(buf("y", ["M", "N"], "out"))
        plan = [gemm("x", "W", "y", "M", "N", "K", trans_b=True),
                launch(kernel, ["M"], [256], ["y", "b", i32("N")])]
        scr = []
        outd = "y is [M, N]"
        ob = "M * N"
    else:
        bufs.append(buf("y", list(out_shape), "out"))
        scr = [scratch("t", "f32", "M * N")]
        plan = [gemm("x", "W", "t", "M", "N", "K", trans_b=True),
                launch(kernel, ["M"], [256], ["t", "b", "y", i32("N")])]
        outd = "y is [%s]" % ", ".join(out_shape)
        ob = "M"
    desc = "%s Then, per row i: %s %s. %s %s" % (LIN, ops_desc, outd, xinit_desc(std, std_why),
                                                  FP32_DAMPED if damped else FP32)
    return make_task2(num, cat, title, desc, gemm_params(), gemm_shapes(num, kname, nname),
                      bufs, src, plan, scratch_bufs=scr, tolerance=tol, tolerance_note=tol_note,
                      flops="2 * M * N * K", bytes_="4 * (M * K + N * K + N + %s)" % ob,
                      reference_note=REFNOTE)


def reductions():
    T = []
    T.append(red_task(
        18, "gemm_reduction", "Linear, sum, then max/avgpool/logsumexp over a size-1 dimension",
        "rowsum", "y[i, 0] = sum over j of t[i, j] (the model's max, mean and two logsumexp "
        "that follow run over the kept size-1 dimension and are identities).", "",
        tol={"atol": 2e-3, "rtol": 1e-4},
        tol_note=("y is a sum of N values of std ~0.58: |y| ~ 0.58*sqrt(N) (~50 at N = 8192). "
                  "An fp32 sum of N terms in any order differs from the exact one by ~6e-8*|t|*N "
                  "worst case and the GEMM's own order error adds ~2e-6*sqrt(N); atol 2e-3 + "
                  "rtol 1e-4 covers both (PyTorch's fp32 tree reduction included) while a "
                  "missing bias (N*|b| ~ 0.5) or any wrong row fails.")))
    T.append(red_task(
        56, "gemm_reduction", "Linear, sigmoid, sum", "rowsum",
        "y[i, 0] = sum over j of sigmoid(t[i, j]) with %s." % SIG,
        "v = sigmoid_f(v);", kname="input_size", nname="hidden_size",
        tol={"atol": 1e-3, "rtol": 1e-5}, damped=True,
        tol_note=("y ~ N/2 (16384 at N = 32768) and varies between rows by ~0.13*sqrt(N) (~24). "
                  "One fp32 ulp at 16384 is 2e-3; an fp32 tree or pairwise sum of N terms in any "
                  "order stays within ~1e-2 absolute, i.e. 1e-3 + 1e-5*|y| (0.17 at the default "
                  "size); a constant (e.g. N/2) or a sum missing the bias fails. The sum averages "
                  "GEMM errors out: a TF32 GEMM stays within this tolerance (0.2 of it in a numpy "
                  "simulation), which the task accepts.")))
    T.append(red_task(
        22, "gemm_reduction", "Linear, scale, residual add, clamp, LogSumExp, Mish", "lse",
        "v = t[i, j] * 2.0, v = v + v, clamp to [-10, 10], l = log(sum over j of exp(v)) "
        "(logsumexp over the row, keepdim), then y[i, 0] = l * mish(l) with %s." % MISH,
        "v = v * 2.0f;\nv = v + v;\nv = fminf(fmaxf(v, -10.0f), 10.0f);",
        "v = v * mish_f(v);", kname="input_size", nname="hidden_size",
        tol={"atol": 1e-5, "rtol": 1e-5},
        tol_note=("l ~ log(N) + O(1) (~10 at N = 8192), y ~ l^2 (~100). logsumexp's error is "
                  "at most the largest error of its inputs (4*2e-6 from the GEMM's order), and "
                  "d(l*mish(l))/dl ~ 2l amplifies it to ~2e-4 absolute at y ~ 100, i.e. ~2e-6 "
                  "relative, and PyTorch's fp32 logsumexp adds ~1e-6 to l: rtol 1e-5 keeps a ~5x "
                  "margin (a numpy fp32 GEMM reaches 0.05 of the tolerance at the default size) "
                  "while TF32 GEMM inputs exceed it ~2.5x. Skipping the clamp, the doubling or "
                  "the mish changes y by far more.")))
    T.append(red_task(
        64, "gemm_reduction", "Linear, LogSumExp, LeakyReLU x2, GELU x2", "lse",
        "l = log(sum over j of exp(t[i, j])) (logsumexp over the row, keepdim), then "
        "leaky_relu(negative_slope=0.01) twice and %s twice: y[i, 0]." % GELU,
        "", "v = leaky_f(v, 0.01f);\nv = leaky_f(v, 0.01f);\nv = gelu_f(v);\nv = gelu_f(v);",
        tol={"atol": 1e-4, "rtol": 1e-4}, damped=True,
        tol_note=("y ~ log(N) (~9 at N = 8192); logsumexp's error is bounded by its inputs' "
                  "(~2e-6 from the GEMM's order) and the activations have slope <= 1.1 there: "
                  "1e-4 abs + rel is safe, and any missing op or a constant fails. logsumexp "
                  "averages GEMM errors out, so a TF32 GEMM passes too (0.005 of the tolerance "
                  "in a numpy simulation); the task accepts it.")))
    T.append(red_task(
        99, "gemm_reduction", "Linear, GELU, softmax", "softmax",
        "y[i, j] = softmax over j of gelu(t[i, j]) with %s" % GELU,
        "v = gelu_f(v);", std=2.0,
        tol={"atol": 1e-9, "rtol": 2e-4},
        tol_note=("Softmax outputs are ~1/N (1.2e-4 at N = 8192), so the check is relative: "
                  "a relative error of y equals the absolute error of gelu(t) minus that of the "
                  "row's logsumexp (~2e-5 for any correct fp32 GEMM order at the default size, 0.1 of "
                  "rtol 2e-4; TF32 exceeds it 8x); "
                  "atol 1e-9 only absorbs outputs that underflow. All zeros, a uniform 1/N, or "
                  "a softmax without the GELU fail.")))
    return T


def gn_task(num, title, ops_desc, body, *, gname, kname="in_features", nname="out_features",
            extras=(), std=1.0):
    p = problem(num)
    kernel = "groupnorm_ref"
    params_c = "".join("const float* __restrict__ %s, " % e[0] for e in extras)
    src = (HEAD.format(problem=p["problem"], what="bias, GroupNorm statistics per (row, group) "
                       "in double, normalize, then " + ops_desc) + "@@DEV@@" +
           GN.format(kernel=kernel, params=params_c, body=indent(body)))
    bufs = [xbuf(std)] + wbufs(True)
    edesc = ""
    for name, init, d in extras:
        bufs.append(buf(name, ["N"], "in", init=init))
        edesc += " " + d
    bufs.append(buf("y", ["M", "N"], "out"))
    plan = [gemm("x", "W", "y", "M", "N", "K", trans_b=True),
            launch(kernel, ["ceil_div(G, 8)", "M"], [256], ["y", "b"] + [e[0] for e in extras] +
                   [i32("N"), i32("G")])]
    params = gemm_params({"G": "GroupNorm groups (num_groups), divides N"})
    shapes = gemm_shapes(num, kname, nname, small={"N": 592, "G": 16},
                         tiny={"N": 10, "G": 2}, extra={"G": gname})
    desc = ("%s Then GroupNorm(G, N) over the features of each row: for row i and group g "
            "(features g*N/G .. (g+1)*N/G - 1), mean and biased variance of t over the group, "
            "v = (t[i, j] - mean) / sqrt(var + 1e-5) (the GroupNorm's affine weight and bias "
            "are at their initial values 1 and 0 in KernelBench, so there are none); then %s "
            "y = v, [M, N].%s %s %s" % (LIN, ops_desc, edesc, xinit_desc(std), FP32))
    nb = " + N" * len(extras)
    return make_task2(
        num, "gemm_norm", title, desc, params, shapes, bufs, src, plan,
        tolerance={"atol": 1e-4, "rtol": 1e-4},
        tolerance_note=("Normalized values are O(1); a correct fp32 GEMM's order error "
                        "(~1e-6*|t|) is divided by the group's std (~0.58*std(x)), and fp32 "
                        "group statistics in any order agree to ~1e-6, so 1e-4 abs + rel is "
                        "safe; normalizing per row instead of per group, a population/sample "
                        "variance mix-up at small group sizes, or TF32 GEMMs fail."),
        flops="2 * M * N * K", bytes_="4 * (M * K + N * K + N + M * N%s)" % nb,
        reference_note=REFNOTE + "; the GroupNorm epilogue takes one warp per (row, group)")


def norms():
    T = []
    T.append(gn_task(30, "Linear, GroupNorm, Hardtanh", "hardtanh to [-2, 2].",
                     "v = hardtanh_f(v, -2.0f, 2.0f);", gname="num_groups"))
    T.append(gn_task(62, "Linear, GroupNorm, LeakyReLU, sum with itself",
                     "v = leaky_relu(v, negative_slope=0.01), v = v + v.",
                     "v = leaky_f(v, 0.01f);\nv = v + v;", gname="num_groups",
                     kname="input_size", nname="hidden_size"))
    T.append(gn_task(88, "Linear, GroupNorm, Swish, multiply, Swish",
                     "v = v * sigmoid(v), v = v * multiply_weight[j], v = v * sigmoid(v) (%s)."
                     % SIG,
                     "v = v * sigmoid_f(v);\nv = v * multiply_weight[j];\nv = v * sigmoid_f(v);",
                     gname="num_groups",
                     extras=[("multiply_weight", normal(0.0, 1.0),
                              "multiply_weight is [N], normal(0, 1) (the model's torch.randn "
                              "parameter).")]))
    return T


def tasks():
    return elementwise() + reductions() + norms()
