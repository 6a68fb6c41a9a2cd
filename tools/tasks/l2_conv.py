"""Level 2, convolution-based problems: nn.Conv2d (stride 1, no padding, with
bias: PyTorch's defaults, which these KernelBench models use) as im2col + cuBLAS
SGEMM (tools/tasks/conv_gemm.py, the kernels of the level-1 convolutions) with the
bias and the elementwise epilogue in one pass after the GEMM (conv_store), and for
the pooling problem the bias and GELU fused into the pooling kernel, which reads
the GEMM's output.

KernelBench's input height/width are not in problems.json: 128x128 for
problem 1 (read from the KernelBench source of this version) and 256x256 for
the 8 -> 64 channel problems (87's source of this version says 256x256; 57,
69, 71 and 67 share its constants and are assumed to match).
"""
from l2_gen import make_task2, problem, HELPERS
from taskgen import buf, normal, uniform, launch, i32
import conv_gemm

HEAD = r'''
// Reference for KernelBench level 2 problem {problem}.
// The convolution (stride 1, no padding) as {conv}, then: {what}
// PyTorch eager calls cuDNN for the convolution and runs one kernel per following op.
'''

DEVC = r'''
__device__ static inline float sigmoid_f(float v) { return 1.0f / (1.0f + expf(-v)); }
__device__ static inline float mish_f(float v) { return v * tanhf(v > 20.0f ? v : log1pf(expf(v))); }
__device__ static inline float gelu_f(float v) { return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); }
__device__ static inline float leaky_f(float v, float s) { return v > 0.0f ? v : v * s; }
__device__ static inline float hardswish_f(float v) { return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f; }
'''

HELPERS["@@DEVC@@"] = DEVC

POOL = r'''
#define THREADS 256
// Global average pool of gelu(t + cb[co]) over each (image, channel) plane of a slice's
// GEMM output t ([nb][CO][HW], no bias): one block per plane, the sum in double in a
// fixed order; planes of images n0 + j >= N are skipped.
extern "C" __global__ void __launch_bounds__(THREADS) avgpool_ref(const float* __restrict__ t,
        const float* __restrict__ cb, float* __restrict__ y, int N, int n0, int CO, int HW)
{
        __shared__ double sh[THREADS];
        int co = (int)(blockIdx.x % CO);
        long long n = n0 + (long long)(blockIdx.x / CO);
        if (n >= N)
                return;
        const float* p = t + (unsigned long long)blockIdx.x * HW;
        float b = cb[co];
        double s = 0.0;
        for (int i = threadIdx.x; i < HW; i += THREADS)
                s += (double)gelu_f(p[i] + b);
        sh[threadIdx.x] = s;
        __syncthreads();
        for (int k = THREADS / 2; k > 0; k >>= 1) {
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }
        if (threadIdx.x == 0)
                y[(unsigned long long)n * CO + co] = (float)(sh[0] / HW);
}
'''

CONV_HOW = {"im2col": "im2col + a strided-batched cuBLAS SGEMM per\n// image (TF32 off)",
            "implicit": "one implicit-GEMM kernel (fp32-accurate: fp32 FMAs, or 3xTF32\n// on the "
                        "tensor cores for a 128-channel tile) that applies the bias and the\n// "
                        "epilogue as it stores"}
GELU = "gelu(v) = 0.5*v*(1 + erf(v/sqrt(2))) (exact, PyTorch's default)"
REFNOTE = ("; the bias and the epilogue in one elementwise pass (conv_store) after the "
           "GEMM; " + conv_gemm.CUDNN + ", then one kernel per op")
TOL_NOTE = ("Convolution outputs are O(0.6) (fan_in-scaled weights, normal(0, 1) inputs). "
            "Correct fp32 convolutions in any order or algorithm (implicit GEMM, fp32 Winograd) "
            "agree to ~1e-5, and the epilogue's ops have slopes <= ~1.1; TF32 tensor-core math "
            "errs by ~3e-4 and fails, as does skipping any op.")


def conv_of():
    """The task's convolution for conv_gemm (G = 1, stride 1, no padding)."""
    return conv_gemm.Conv(2, False, "N", "CI", "CO", "1", ["H", "W"], ["H - K + 1", "W - K + 1"],
                          ["K", "K"], ["1", "1"], ["0", "0"], ["1", "1"])


def dflt(shapes):
    return {k: v for k, v in shapes[0].items() if k != "name"}


def conv_common(num, hw, small_ci=5, tiny_ci=3):
    kp = problem(num)["params"]
    params = {"N": "batch", "CI": "input channels", "CO": "output channels",
              "H": "input height", "W": "input width", "K": "kernel size (square)"}
    shapes = [{"name": "default", "N": kp["batch_size"], "CI": kp["in_channels"],
               "CO": kp["out_channels"], "H": hw, "W": hw, "K": kp["kernel_size"]},
              {"name": "small", "N": 2, "CI": small_ci, "CO": 7, "H": 37, "W": 29,
               "K": kp["kernel_size"]},
              {"name": "tiny", "N": 1, "CI": tiny_ci, "CO": 4, "H": 7, "W": 6,
               "K": kp["kernel_size"]}]
    bufs = [buf("x", ["N", "CI", "H", "W"], "in", init=normal(0.0, 1.0)),
            buf("w", ["CO", "CI", "K", "K"], "in", init=uniform(-1, 1, fan_in="CI * K * K")),
            buf("cb", ["CO"], "in", init=uniform(-1, 1, fan_in="CI * K * K"))]
    return params, shapes, bufs


CONV_DESC = ("t = conv2d(x, w) + cb[co] is the model's nn.Conv2d(CI, CO, K) with PyTorch's "
             "defaults (stride 1, no padding, bias): x is [N, CI, H, W], w is [CO, CI, K, K], cb "
             "is [CO]; t is [N, CO, OH, OW] with OH = H - K + 1, OW = W - K + 1, "
             "t[n, co, oh, ow] = cb[co] + sum over c, kh, kw of x[n, c, oh + kh, ow + kw] * "
             "w[co, c, kh, kw]. All tensors row-major (NCHW) fp32.")
INIT = ("x is normal(0, 1) (KernelBench's inputs are torch.rand); w and cb are uniform(-1, 1)/"
        "sqrt(CI*K*K) as PyTorch initializes nn.Conv2d. Accumulate in fp32 (or better); TF32 "
        "is not accurate enough.")


def flops_bytes(extra_in=""):
    out = "N * CO * (H - K + 1) * (W - K + 1)"
    return ("2 * %s * CI * K * K" % out,
            "4 * (N * CI * H * W + CO * CI * K * K + CO%s + %s)" % (extra_in, out))


def ew_conv(num, title, hw, ops_desc, body, extras=(), hw_note=""):
    """body: C statements over v (the convolution with bias), co and ep (the one extra
    [CO] operand, extras[0], if any)."""
    p = problem(num)
    params, shapes, bufs = conv_common(num, hw)
    conv = conv_of()
    (form, slices), _ = conv_gemm.choose(conv, dflt(shapes), shapes=[dflt([d]) for d in shapes])
    plan, scr = conv_gemm.plan(conv, form, slices, bias="cb", ep=extras[0][0] if extras else None,
                               epilogue=True)
    src = (HEAD.format(problem=p["problem"], conv=CONV_HOW[form[:8]],
                       what="the bias and " + ops_desc) + "@@DEVC@@" +
           conv_gemm.source(body + "\nreturn v;", form=form))
    edesc = ""
    for name, init, d in extras:
        bufs.append(buf(name, ["CO"], "in", init=init))
        edesc += " " + d
    bufs.append(buf("y", ["N", "CO", "H - K + 1", "W - K + 1"], "out"))
    desc = ("%s Then, elementwise with v = t[n, co, oh, ow]: %s y = v, [N, CO, OH, OW].%s %s" % (
        CONV_DESC, ops_desc, edesc, INIT))
    fl, by = flops_bytes(" + CO" * len(extras))
    return make_task2(num, "conv_epilogue", title, desc, params, shapes, bufs, src, plan,
                      scratch_bufs=scr, tolerance={"atol": 2e-4, "rtol": 1e-3},
                      tolerance_note=TOL_NOTE, flops=fl, bytes_=by, trials=1,
                      reference_note=conv_gemm.note(form, slices) + (
                          REFNOTE if form == "im2col" else "; " + conv_gemm.CUDNN +
                          ", then one kernel per op"),
                      notes=("KernelBench's height/width are not in problems.json: %dx%d %s."
                             % (hw, hw, hw_note)))


HW87 = ("as in KernelBench's 87_Conv2d_Subtract_Subtract_Mish source of this version; "
        "this problem shares its other constants (batch 128, 8 -> 64 channels, kernel 3) and is "
        "assumed to use the same size")


def tasks():
    T = []
    T.append(ew_conv(1, "Conv2d, ReLU, bias add", 128, "v = relu(v) + bias[co].",
                     "v = fmaxf(v, 0.0f);\nv = v + ep[co];",
                     extras=[("bias", normal(0.0, 1.0), "bias is [CO] (the model's "
                              "torch.randn((CO, 1, 1)) parameter, broadcast over H and W), "
                              "normal(0, 1).")],
                     hw_note="from KernelBench's source of this version"))
    T.append(ew_conv(57, "Conv2d, ReLU, HardSwish", 256,
                     "v = relu(v), then hardswish(v) = v * min(max(v + 3, 0), 6) / 6.",
                     "v = fmaxf(v, 0.0f);\nv = hardswish_f(v);", hw_note=HW87))
    T.append(ew_conv(69, "Conv2d, HardSwish, ReLU", 256,
                     "v = hardswish(v) = v * min(max(v + 3, 0), 6) / 6, then relu(v).",
                     "v = hardswish_f(v);\nv = fmaxf(v, 0.0f);", hw_note=HW87))
    T.append(ew_conv(71, "Conv2d, divide, LeakyReLU", 256,
                     "v = v / 2.0, then leaky_relu(v, negative_slope=0.01).",
                     "v = v / 2.0f;\nv = leaky_f(v, 0.01f);", hw_note=HW87))
    T.append(ew_conv(87, "Conv2d, subtract, subtract, Mish", 256,
                     "v = v - 0.5 - 0.2 (two subtractions in this order), then mish(v) = "
                     "v*tanh(softplus(v)), softplus(v) = log(1 + exp(v)).",
                     "v = v - 0.5f;\nv = v - 0.2f;\nv = mish_f(v);",
                     hw_note="from KernelBench's source of this version"))
    T.append(pool_conv())
    return T


def pool_conv():
    num = 67
    p = problem(num)
    params, shapes, bufs = conv_common(num, 256)
    conv = conv_of()
    (form, slices), _ = conv_gemm.choose(conv, dflt(shapes), ytmp=True)

    def pool(n0, nb):
        return [launch("avgpool_ref", ["(%s) * CO" % nb], [256],
                       ["ytmp", "cb", "y", i32("N"), i32(n0), i32("CO"),
                        i32("(H - K + 1) * (W - K + 1)")])]
    plan, scr = conv_gemm.plan(conv, form, slices, bias="cb", consumer=pool)
    what = ("avgpool_ref averages gelu(t + bias) over each (n, co) plane of the GEMM's output "
            "(%s)." % GELU)
    src = (HEAD.format(problem=p["problem"], conv=CONV_HOW[form[:8]], what=what) + "@@DEVC@@" +
           conv_gemm.source(form=form) + POOL)
    bufs.append(buf("y", ["N", "CO"], "out"))
    desc = ("%s Then %s elementwise, and adaptive_avg_pool2d to 1x1 squeezed: y[n, co] = mean "
            "over (oh, ow) of gelu(t[n, co, oh, ow]); y is [N, CO]. %s" % (CONV_DESC, GELU, INIT))
    fl, by = flops_bytes()
    by = "4 * (N * CI * H * W + CO * CI * K * K + CO + N * CO)"
    return make_task2(
        num, "conv_epilogue", "Conv2d, GELU, global average pool", desc, params, shapes, bufs,
        src, plan, scratch_bufs=scr,
        tolerance={"atol": 1e-5, "rtol": 1e-4},
        tolerance_note=("y is a mean of OH*OW GELU outputs of O(0.5): per-element convolution "
                        "order errors (~1e-5, independent) average out to ~1e-7 and an fp32 "
                        "sum of 64516 terms in any order stays within ~1e-6 relative; atol "
                        "1e-5 + rtol 1e-4 is safe while a missing GELU, bias or a constant "
                        "output fails (means differ between channels by O(0.1))."),
        flops=fl, bytes_=by, trials=1,
        reference_note=(conv_gemm.note(form, slices) + "; the bias and GELU fused into the "
                        "pooling kernel, which reads the GEMM's output; " + conv_gemm.CUDNN +
                        ", then one kernel per op"),
        notes="KernelBench's height/width are not in problems.json: 256x256 %s." % HW87)
