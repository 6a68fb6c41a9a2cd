"""Level 1 reductions over dimension 1 (KernelBench 47, 48, 49, 53) and arg-reductions (51, 52)."""
from taskgen import make_task, buf, normal, launch, i32, problem

PARAMS = {"B": "batch (KernelBench batch_size)", "D1": "reduced dimension (dim1)",
          "D2": "inner dimension (dim2)"}
SHAPES = [{"name": "default", "B": 128, "D1": 4096, "D2": 4095},
          {"name": "small", "B": 7, "D1": 1000, "D2": 333},
          {"name": "tiny", "B": 2, "D1": 17, "D2": 5}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what} of a row-major
// fp32 tensor x[B, D1, D2] over dimension 1. A block of 32 x 8 threads takes
// 32 neighbouring outputs (b, j) (threadIdx.x: j, so a warp reads 128
// contiguous bytes per i) and splits the reduced dimension into 8 slices
// (threadIdx.y); each thread reduces its slice in order, 4 loads in flight,
// and thread row 0 combines the 8 slice results in slice order, so the result
// does not depend on timing.
#define TX 32
#define TY 8

extern "C" __global__ void __launch_bounds__(TX * TY) {kernel}(const float* __restrict__ x,
        {otype}* __restrict__ y, int B, int D1, int D2)
{{
        __shared__ {acc_t} sh_acc[TY][TX];
{arg_shared}        int j = blockIdx.x * TX + threadIdx.x;
        int b = blockIdx.y;
        int per = (D1 + TY - 1) / TY;
        int i0 = threadIdx.y * per;
        int i1 = i0 + per < D1 ? i0 + per : D1;
        {acc_t} acc = {ident};
{arg_decl}        if (j < D2) {{
                const float* p = x + (unsigned long long)b * D1 * D2 + j;
#pragma unroll 4
                for (int i = i0; i < i1; i++) {{
                        float v = p[(unsigned long long)i * D2];
{step}
                }}
        }}
        sh_acc[threadIdx.y][threadIdx.x] = acc;
{arg_store}        __syncthreads();
        if (threadIdx.y != 0 || j >= D2)
                return;
        for (int w = 1; w < TY; w++) {{
{merge}
        }}
        y[(unsigned long long)b * D2 + j] = {result};
}}
'''

# op: (acc type, identity, step, merge of slice w, result, output type)
OPS = {
    "sum": ("double", "0.0", "acc += (double)v;", "acc += sh_acc[w][threadIdx.x];",
            "(float)acc", "float"),
    "mean": ("double", "0.0", "acc += (double)v;", "acc += sh_acc[w][threadIdx.x];",
             "(float)(acc / D1)", "float"),
    "max": ("float", "-__int_as_float(0x7f800000)", "acc = fmaxf(acc, v);",
            "acc = fmaxf(acc, sh_acc[w][threadIdx.x]);", "acc", "float"),
    "min": ("float", "__int_as_float(0x7f800000)", "acc = fminf(acc, v);",
            "acc = fminf(acc, sh_acc[w][threadIdx.x]);", "acc", "float"),
    # strict comparisons: within a slice and across slices (in order) the
    # first index wins ties
    "argmax": ("float", "-__int_as_float(0x7f800000)",
               "if (v > acc || i == i0) {\n                                acc = v;\n"
               "                                arg = i;\n                        }",
               "if (sh_arg[w][threadIdx.x] >= 0 && sh_acc[w][threadIdx.x] > acc) {\n"
               "                        acc = sh_acc[w][threadIdx.x];\n"
               "                        arg = sh_arg[w][threadIdx.x];\n                }",
               "arg", "long long"),
    "argmin": ("float", "__int_as_float(0x7f800000)",
               "if (v < acc || i == i0) {\n                                acc = v;\n"
               "                                arg = i;\n                        }",
               "if (sh_arg[w][threadIdx.x] >= 0 && sh_acc[w][threadIdx.x] < acc) {\n"
               "                        acc = sh_acc[w][threadIdx.x];\n"
               "                        arg = sh_arg[w][threadIdx.x];\n                }",
               "arg", "long long"),
}


SUM_EXAMPLE = r'''
// A minimal correct candidate: one thread per output (b, j), float sum over i.
extern "C" __global__ void sum_dim1(const float* x, float* y, int D1, int D2)
{
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        int b = blockIdx.y;
        if (j >= D2)
                return;
        const float* p = x + (unsigned long long)b * D1 * D2 + j;
        float acc = 0.0f;
        for (int i = 0; i < D1; i++)
                acc += p[(unsigned long long)i * D2];
        y[(unsigned long long)b * D2 + j] = acc;
}
'''


def one(num, op, cat, title, math, oshape, odtype, tol, tnote, torch_desc):
    acc_t, ident, step, merge, result, otype = OPS[op]
    isarg = op.startswith("arg")
    kernel = op + "_dim1_ref"
    src = SRC.format(problem=problem(num)["problem"], what=title.lower(), kernel=kernel,
                     otype=otype, acc_t=acc_t, ident=ident, result=result,
                     step="                        " + step,
                     merge="                " + merge,
                     arg_shared="        __shared__ int sh_arg[TY][TX];\n" if isarg else "",
                     arg_decl="        int arg = -1;   /* -1: empty slice */\n" if isarg else "",
                     arg_store="        sh_arg[threadIdx.y][threadIdx.x] = arg;\n" if isarg else "")
    desc = ("%s over dimension 1 of a row-major fp32 tensor x of shape [B, D1, D2]: %s. "
            "The output y has shape %s (%s), row-major. Inputs are normal(0, 1)."
            % (title, math, "[" + ", ".join(oshape) + "]", torch_desc))
    return make_task(
        num, cat, title + " over a dimension", desc, PARAMS, SHAPES,
        [buf("x", ["B", "D1", "D2"], "in", init=normal(0, 1)),
         buf("y", oshape, "out", dtype=odtype)],
        src, [launch(kernel, ["ceil_div(D2, 32)", "B"], [32, 8],
                     ["x", "y", i32("B"), i32("D1"), i32("D2")])],
        tolerance=tol, tolerance_note=tnote,
        flops="B * D1 * D2", bytes_="4 * B * D1 * D2 + %d * B * D2" % (8 if odtype == "i64" else 4),
        trials=3,
        example=(SUM_EXAMPLE, [launch("sum_dim1", ["ceil_div(D2, 128)", "B"], [128],
                                      ["x", "y", i32("D1"), i32("D2")])]) if op == "sum" else None,
        reference_note="32 outputs per block, the reduced dimension split into 8 slices "
                       "combined in a fixed order%s; "
                       "PyTorch eager runs its generic reduce kernel" %
                       (" accumulating in double" if op in ("sum", "mean") else ""))


def tasks():
    return [
        one(47, "sum", "reduction", "Sum reduction",
            "y[b, 0, j] = sum_i x[b, i, j]", ["B", "1", "D2"], "f32",
            {"atol": 1e-3, "rtol": 1e-4},
            "Sums of D1 = 4096 normal values have magnitude ~64; atol 1e-3 admits float "
            "accumulation in any order (error ~1e-4) while a wrong element fails. "
            "The reference accumulates in double.", "torch.sum(x, dim=1, keepdim=True)"),
        one(48, "mean", "reduction", "Mean reduction",
            "y[b, j] = (1 / D1) * sum_i x[b, i, j]", ["B", "D2"], "f32",
            {"atol": 1e-5, "rtol": 1e-4},
            "Means of D1 normal values have magnitude ~1/sqrt(D1) ~ 0.016: atol 1e-5 so that "
            "an all-zero output fails. The reference accumulates in double.",
            "torch.mean(x, dim=1)"),
        one(49, "max", "reduction", "Max reduction",
            "y[b, j] = max_i x[b, i, j]", ["B", "D2"], "f32",
            {"atol": 0, "rtol": 0}, "Max is exact in any order: the output must match bit for bit.",
            "torch.max(x, dim=1).values"),
        one(53, "min", "reduction", "Min reduction",
            "y[b, j] = min_i x[b, i, j]", ["B", "D2"], "f32",
            {"atol": 0, "rtol": 0}, "Min is exact in any order: the output must match bit for bit.",
            "torch.min(x, dim=1).values"),
        one(51, "argmax", "argreduce", "Argmax",
            "y[b, j] = the index i in [0, D1) of the largest x[b, i, j] (the smallest such index "
            "on ties; ties do not occur with these inputs)", ["B", "D2"], "i64",
            {"atol": 0, "rtol": 0}, "Indices are exact.", "torch.argmax(x, dim=1), int64"),
        one(52, "argmin", "argreduce", "Argmin",
            "y[b, j] = the index i in [0, D1) of the smallest x[b, i, j] (the smallest such index "
            "on ties; ties do not occur with these inputs)", ["B", "D2"], "i64",
            {"atol": 0, "rtol": 0}, "Indices are exact.", "torch.argmin(x, dim=1), int64"),
    ]
