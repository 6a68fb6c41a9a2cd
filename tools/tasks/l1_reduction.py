"""Level 1 reductions over dimension 1 (KernelBench 47, 48, 49, 53) and arg-reductions (51, 52)."""
from taskgen import make_task, buf, normal, launch, i32, problem

PARAMS = {"B": "batch (KernelBench batch_size)", "D1": "reduced dimension (dim1)",
          "D2": "inner dimension (dim2)"}
SHAPES = [{"name": "default", "B": 128, "D1": 4096, "D2": 4095},
          {"name": "small", "B": 7, "D1": 1000, "D2": 333},
          {"name": "tiny", "B": 2, "D1": 17, "D2": 5}]

SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what} of a row-major
// fp32 tensor x[B, D1, D2] over dimension 1. One thread per output (b, j),
// looping over i in order; neighbouring threads read neighbouring j (coalesced).
extern "C" __global__ void {kernel}(const float* __restrict__ x, {otype}* __restrict__ y,
                                    int B, int D1, int D2)
{{
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        int b = blockIdx.y;
        if (j >= D2)
                return;
        const float* p = x + (unsigned long long)b * D1 * D2 + j;
{body}
        y[(unsigned long long)b * D2 + j] = {result};
}}
'''

BODIES = {
    "sum": ("double acc = 0.0;\n        for (int i = 0; i < D1; i++)\n"
            "                acc += (double)p[(unsigned long long)i * D2];", "(float)acc", "float"),
    "mean": ("double acc = 0.0;\n        for (int i = 0; i < D1; i++)\n"
             "                acc += (double)p[(unsigned long long)i * D2];", "(float)(acc / D1)", "float"),
    "max": ("float acc = p[0];\n        for (int i = 1; i < D1; i++)\n"
            "                acc = fmaxf(acc, p[(unsigned long long)i * D2]);", "acc", "float"),
    "min": ("float acc = p[0];\n        for (int i = 1; i < D1; i++)\n"
            "                acc = fminf(acc, p[(unsigned long long)i * D2]);", "acc", "float"),
    "argmax": ("float best = p[0];\n        long long arg = 0;\n        for (int i = 1; i < D1; i++) {\n"
               "                float v = p[(unsigned long long)i * D2];\n"
               "                if (v > best) {  /* strict: first index wins ties */\n"
               "                        best = v;\n                        arg = i;\n                }\n        }",
               "arg", "long long"),
    "argmin": ("float best = p[0];\n        long long arg = 0;\n        for (int i = 1; i < D1; i++) {\n"
               "                float v = p[(unsigned long long)i * D2];\n"
               "                if (v < best) {  /* strict: first index wins ties */\n"
               "                        best = v;\n                        arg = i;\n                }\n        }",
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
    body, result, otype = BODIES[op]
    kernel = op + "_dim1_ref"
    src = SRC.format(problem=problem(num)["problem"], what=title.lower(), kernel=kernel,
                     otype=otype, body="        " + body, result=result)
    desc = ("%s over dimension 1 of a row-major fp32 tensor x of shape [B, D1, D2]: %s. "
            "The output y has shape %s (%s), row-major. Inputs are normal(0, 1)."
            % (title, math, "[" + ", ".join(oshape) + "]", torch_desc))
    return make_task(
        num, cat, title + " over a dimension", desc, PARAMS, SHAPES,
        [buf("x", ["B", "D1", "D2"], "in", init=normal(0, 1)),
         buf("y", oshape, "out", dtype=odtype)],
        src, [launch(kernel, ["ceil_div(D2, 256)", "B"], [256],
                     ["x", "y", i32("B"), i32("D1"), i32("D2")])],
        tolerance=tol, tolerance_note=tnote,
        flops="B * D1 * D2", bytes_="4 * B * D1 * D2 + %d * B * D2" % (8 if odtype == "i64" else 4),
        trials=3,
        example=(SUM_EXAMPLE, [launch("sum_dim1", ["ceil_div(D2, 128)", "B"], [128],
                                      ["x", "y", i32("D1"), i32("D2")])]) if op == "sum" else None,
        reference_note="one thread per output, sequential loop over the reduced dimension%s; "
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
