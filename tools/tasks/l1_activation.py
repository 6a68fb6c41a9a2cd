"""Level 1 elementwise activations (KernelBench 19-22, 25-32, 88)."""
from taskgen import make_task, buf, normal, launch, u64

PARAMS = {"B": "batch rows (KernelBench batch_size)", "D": "row length (KernelBench dim)"}


def shapes(B, D):
    return [{"name": "default", "B": B, "D": D},
            {"name": "small", "B": 1000, "D": 4093},
            {"name": "tiny", "B": 3, "D": 33}]


SRC = r'''
// Reference for KernelBench level 1 problem {problem}: y = {math}, elementwise.
// fp32 in, fp32 out, 64-bit indices (the default size has more than 2^31
// elements). When x and y are 16-byte aligned each thread loads two float4s
// before computing either (blocks of 256 threads cover 2048 elements; a
// grid-stride loop covers the rest when the grid is capped), then a scalar
// tail; otherwise a scalar grid-stride loop.
{helpers}
__device__ static float act(float v)
{{
        return {expr};
}}

__device__ static float4 act4(float4 v)
{{
        return make_float4(act(v.x), act(v.y), act(v.z), act(v.w));
}}

extern "C" __global__ void {kernel}(const float* __restrict__ x, float* __restrict__ y,
                                    unsigned long long n)
{{
        unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x * 2 + threadIdx.x;
        if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {{
                const float4* x4 = (const float4*)x;
                float4* y4 = (float4*)y;
                unsigned long long n4 = n / 4;
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x * 2;
                for (unsigned long long i = t; i < n4; i += stride) {{
                        unsigned long long j = i + blockDim.x;
                        float4 a = x4[i];
                        if (j < n4) {{
                                float4 b = x4[j];
                                y4[i] = act4(a);
                                y4[j] = act4(b);
                        }} else {{
                                y4[i] = act4(a);
                        }}
                }}
                unsigned long long k = n4 * 4 + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                if (k < n)
                        y[k] = act(x[k]);
        }} else {{
                unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
                for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
                     i < n; i += stride)
                        y[i] = act(x[i]);
        }}
}}
'''

EXAMPLE = r'''
// A minimal correct candidate: one thread per element, 64-bit index.
extern "C" __global__ void relu(const float* x, float* y, unsigned long long n)
{
        unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
'''

# num, kernel, title, math (for the description), expr, helpers, init, tolerance, flops/elem, note
ACTS = [
    (19, "relu_ref", "ReLU", "max(x, 0)", "v > 0.0f ? v : 0.0f", "", normal(0, 1), None, 1, ""),
    (20, "leaky_relu_ref", "LeakyReLU (negative_slope = 0.01)",
     "x if x >= 0 else 0.01 * x  (torch.nn.functional.leaky_relu, negative_slope=0.01)",
     "v >= 0.0f ? v : 0.01f * v", "", normal(0, 1), None, 2, ""),
    (21, "sigmoid_ref", "Sigmoid", "1 / (1 + exp(-x))", "1.0f / (1.0f + expf(-v))", "",
     normal(0, 3), "t", 4, ""),
    (22, "tanh_ref", "Tanh", "tanh(x)", "tanhf(v)", "", normal(0, 2), "t", 4, ""),
    (25, "swish_ref", "Swish (SiLU)", "x * sigmoid(x) = x / (1 + exp(-x))",
     "v / (1.0f + expf(-v))", "", normal(0, 3), "t", 5, ""),
    (26, "gelu_ref", "GELU (exact, erf form)",
     "0.5 * x * (1 + erf(x / sqrt(2)))  (torch.nn.functional.gelu, approximate='none')",
     "0.5f * v * (1.0f + erff(v * 0.70710678118654752f))", "", normal(0, 2), "t", 8, ""),
    (27, "selu_ref", "SELU",
     "scale * (x if x > 0 else alpha * (exp(x) - 1)), alpha = 1.6732632423543772848170429916717, "
     "scale = 1.0507009873554804934193349852946  (torch.selu)",
     "1.0507009873554804934193349852946f * (v > 0.0f ? v : 1.6732632423543772848170429916717f * expm1f(v))",
     "", normal(0, 2), "t", 5, ""),
    (28, "hardsigmoid_ref", "HardSigmoid",
     "min(max(x + 3, 0), 6) / 6  (torch.nn.functional.hardsigmoid)",
     "fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f", "", normal(0, 4), None, 4,
     "inputs drawn with std 4 so that both clamps are exercised"),
    (29, "softplus_ref", "Softplus (beta = 1, threshold = 20)",
     "log(1 + exp(x)), and x itself where x > 20  (torch.nn.functional.softplus defaults)",
     "v > 20.0f ? v : log1pf(expf(v))", "", normal(0, 8), "t", 4,
     "inputs drawn with std 8 so that the threshold branch (x > 20) is exercised"),
    (30, "softsign_ref", "Softsign", "x / (1 + |x|)", "v / (1.0f + fabsf(v))", "",
     normal(0, 3), None, 3, ""),
    (31, "elu_ref", "ELU (alpha = 1.0)", "x if x > 0 else alpha * (exp(x) - 1), alpha = 1.0",
     "v > 0.0f ? v : expm1f(v)", "", normal(0, 2), "t", 4, ""),
    (32, "hardtanh_ref", "HardTanh (min_val = -1, max_val = 1)",
     "min(max(x, -1), 1)  (torch.nn.functional.hardtanh(x, min_val=-1., max_val=1.))",
     "fminf(fmaxf(v, -1.0f), 1.0f)", "", normal(0, 3), None, 2,
     "inputs drawn with std 3 so that most elements are clamped (a copy of x fails)"),
]


def tasks():
    out = []
    for (num, kernel, title, math, expr, helpers, init, tol, fpe, note) in ACTS:
        from taskgen import problem
        prob = problem(num)["problem"]
        src = SRC.format(problem=prob, math=math, helpers=helpers, kernel=kernel, expr=expr)
        desc = ("Elementwise %s: y[b, d] = %s for a row-major fp32 tensor x of shape [B, D]; "
                "y has the same shape. At the default size B*D = 1,610,612,736 elements "
                "(6 GiB per tensor): index with 64-bit integers." % (title, math))
        if note:
            desc += " Note: " + note + "."
        tolerance = None
        tnote = None
        if tol == "t":
            tolerance = {"atol": 1e-4, "rtol": 1e-3}
            tnote = ("Transcendental function: rtol 1e-3 admits fast-math intrinsics "
                     "(__expf, tanh.approx: relative error <= ~5e-4) while any formula "
                     "error (wrong constant, wrong branch) still fails.")
        plan = [launch(kernel, ["min(ceil_div(B * D, 2048), 1048576)"], [256],
                       ["x", "y", u64("B * D")])]
        example = None
        if num == 19:
            example = (EXAMPLE, [launch("relu", ["ceil_div(B * D, 256)"], [256],
                                        ["x", "y", u64("B * D")])])
        out.append(make_task(
            num, "activation", title, desc, PARAMS, shapes(4096, 393216),
            [buf("x", ["B", "D"], "in", init=init), buf("y", ["B", "D"], "out")],
            src, plan, tolerance=tolerance, tolerance_note=tnote,
            flops="%d * B * D" % fpe, bytes_="8 * B * D",
            trials=2,
            reference_note="direct elementwise kernel, float4 loads and stores (PyTorch "
                           "eager runs its own vectorized elementwise kernel); "
                           "inputs are normal(0, %g), KernelBench draws torch.randn/rand"
                           % init["std"],
            example=example))
    # 88: MinGPT new GELU (tanh approximation), 8192 x 8192
    num = 88
    kernel = "new_gelu_ref"
    math = "0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))"
    expr = "0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))"
    from taskgen import problem
    src = SRC.format(problem=problem(num)["problem"], math=math, helpers="", kernel=kernel, expr=expr)
    desc = ("MinGPT's GELU (tanh approximation), elementwise: y[b, d] = " + math +
            " for a row-major fp32 tensor x of shape [B, D]; y has the same shape. "
            "sqrt(2 / pi) = 0.7978845608028654.")
    out.append(make_task(
        num, "activation", "MinGPT new GELU (tanh approximation)", desc, PARAMS,
        [{"name": "default", "B": 8192, "D": 8192},
         {"name": "small", "B": 1000, "D": 4093},
         {"name": "tiny", "B": 3, "D": 33}],
        [buf("x", ["B", "D"], "in", init=normal(0, 2)), buf("y", ["B", "D"], "out")],
        src, [launch(kernel, ["min(ceil_div(B * D, 2048), 1048576)"], [256], ["x", "y", u64("B * D")])],
        tolerance={"atol": 1e-4, "rtol": 1e-3},
        tolerance_note="Transcendental function: rtol 1e-3 admits fast-math tanh/exp.",
        flops="9 * B * D", bytes_="8 * B * D", trials=3,
        reference_note="one fused elementwise kernel, float4 loads and stores; PyTorch eager "
                       "runs ~7 separate "
                       "elementwise kernels for the Python expression"))
    return out
