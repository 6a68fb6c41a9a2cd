"""Level 1 pooling (KernelBench 41-46)."""
from taskgen import make_task, buf, normal, launch, i32, u64, problem


def out_dim(n, maxpool):
    if maxpool:
        return "(%s + 2 * PAD - DIL * (K - 1) - 1) / S + 1" % n
    return "(%s + 2 * PAD - K) / S + 1" % n


SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// One thread per output element (grid-stride, 64-bit indices); the window is
// clipped to the input, {padnote}.
extern "C" __global__ void {kernel}(const float* __restrict__ x, float* __restrict__ y,
        int NC, {dims_in}, {dims_out}, int K, int S, int PAD, int DIL, unsigned long long n)
{{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < n; o += stride) {{
                unsigned long long r = o;
{decode}
                const float* base = x + nc * {in_size};
                {acc_init}
{loops}
                y[o] = {result};
        }}
}}
'''


# 1D and 2D: a block row per output row (n, c[, oh]), threads along the last
# output axis: no 64-bit division per output element.
SRC_ROWS = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// One thread per output element: blockIdx.x is the output row (n, c{row_axes}),
// blockIdx.y * blockDim.x + threadIdx.x the position along the last output
// axis (blocks of up to 256 threads, fitted to the axis's length), so
// a warp reads neighbouring inputs and nothing is divided per element but the
// row's coordinates; the window is clipped to the input, {padnote}.
extern "C" __global__ void __launch_bounds__(256) {kernel}(const float* __restrict__ x,
        float* __restrict__ y, int NC, {dims_in}, {dims_out}, int K, int S, int PAD, int DIL)
{{
        int o{last} = blockIdx.y * blockDim.x + threadIdx.x;
        if (o{last} >= O{LAST})
                        return;
        unsigned int row = blockIdx.x;
{decode}
                const float* base = x + nc * {in_size};
                {acc_init}
{loops}
                y[(unsigned long long)row * O{LAST} + o{last}] = {result};
}}
'''


def pool_task(num, nd, maxpool, shapes, title):
    axes = ["L"] if nd == 1 else (["H", "W"] if nd == 2 else ["D", "H", "W"])
    outs = ["O" + a for a in axes]
    kernel = "%s_pool%dd_ref" % ("max" if maxpool else "avg", nd)
    dims_in = ", ".join("int %s" % a for a in axes)
    dims_out = ", ".join("int %s" % a for a in outs)
    decode = []
    for a, oa in reversed(list(zip(axes, outs))):
        decode.append("                int o%s = (int)(r %% %s);\n                r /= %s;" % (a.lower(), oa, oa))
    decode.append("                unsigned long long nc = r;")
    in_size = " * ".join("(unsigned long long)%s" % a for a in axes)
    loops = []
    ind = "                "
    idx_terms = []
    for i, a in enumerate(axes):
        al = a.lower()
        loops.append("%sfor (int k%s = 0; k%s < K; k%s++) {" % (ind, al, al, al))
        ind += "        "
        loops.append("%sint i%s = o%s * S - PAD + k%s * DIL;" % (ind, al, al, al))
        loops.append("%sif (i%s < 0 || i%s >= %s)\n%s        continue;" % (ind, al, al, a, ind))
        idx_terms.append(al)
    # flat index
    flat = "i" + idx_terms[0]
    for a, al in zip(axes[1:], idx_terms[1:]):
        flat = "(%s) * (long long)%s + i%s" % (flat, a, al)
    if maxpool:
        loops.append("%sacc = fmaxf(acc, base[%s]);" % (ind, flat))
        acc_init = "float acc = -__int_as_float(0x7f800000);"
        result = "acc"
        padnote = "padding contributes nothing (it acts as -infinity)"
        what = ("%dD max pooling with kernel K, stride S, padding PAD, dilation DIL "
                "(nn.MaxPool%dd, ceil_mode=False)." % (nd, nd))
    else:
        loops.append("%sacc += base[%s];" % (ind, flat))
        acc_init = "float acc = 0.0f;"
        result = "acc / (float)(%s)" % " * ".join(["K"] * nd)
        padnote = ("padding counts as zeros and the divisor is always K^%d "
                   "(count_include_pad=True)" % nd)
        what = ("%dD average pooling with kernel K, stride S, padding PAD "
                "(nn.AvgPool%dd, count_include_pad=True, ceil_mode=False)." % (nd, nd))
    for i in range(nd):
        ind = ind[:-8]
        loops.append("%s}" % ind)
    if nd <= 2:
        rdecode = ["        unsigned long long nc = row;"] if nd == 1 else [
            "        int oh = (int)(row % (unsigned int)OH);",
            "        unsigned long long nc = row / (unsigned int)OH;"]
        src = SRC_ROWS.format(problem=problem(num)["problem"], what=what, padnote=padnote,
                              kernel=kernel, dims_in=dims_in, dims_out=dims_out,
                              row_axes="" if nd == 1 else ", oh", last=axes[-1].lower(),
                              LAST=axes[-1], decode="\n".join(rdecode), in_size=in_size,
                              acc_init=acc_init, loops="\n".join(loops), result=result)
        src = src.replace("\n                ", "\n        ")
    else:
        src = SRC.format(problem=problem(num)["problem"], what=what, padnote=padnote, kernel=kernel,
                         dims_in=dims_in, dims_out=dims_out, decode="\n".join(decode), in_size=in_size,
                         acc_init=acc_init, loops="\n".join(loops), result=result)
    params = {"N": "batch", "C": "channels", "K": "kernel size (all spatial axes)",
              "S": "stride", "PAD": "padding (each side)"}
    for a in axes:
        params[a] = {"L": "length", "D": "depth", "H": "height", "W": "width"}[a]
    if maxpool:
        params["DIL"] = "dilation"
    out_shape = ["N", "C"] + [out_dim(a, maxpool) for a in axes]
    nout = " * ".join(["N", "C"] + ["(%s)" % out_dim(a, maxpool) for a in axes])
    nin = " * ".join(["N", "C"] + axes)
    args = (["x", "y", i32("N * C")] + [i32(a) for a in axes] + [i32(out_dim(a, maxpool)) for a in axes]
            + [i32("K"), i32("S"), i32("PAD"), i32("DIL" if maxpool else "1")])
    if nd <= 2:
        rows = " * ".join(["N", "C"] + ["(%s)" % out_dim(a, maxpool) for a in axes[:-1]])
        olast = out_dim(axes[-1], maxpool)
        bx = "min(256, ceil_div(%s, 32) * 32)" % olast
        plan = [launch(kernel, [rows, "ceil_div(%s, %s)" % (olast, bx)], [bx], args)]
        how = "one thread per output, a block row per output row, direct window loop"
    else:
        plan = [launch(kernel, ["min(ceil_div(%s, 256), 1048576)" % nout], [256], args + [u64(nout)])]
        how = "one thread per output, direct window loop"
    layout = {1: "[N, C, L]", 2: "[N, C, H, W]", 3: "[N, C, D, H, W]"}[nd]
    olayout = "[N, C, " + ", ".join("O" + a for a in axes) + "]"
    formula = ("O%s = floor((%s + 2*PAD - DIL*(K-1) - 1) / S) + 1" if maxpool
               else "O%s = floor((%s + 2*PAD - K) / S) + 1")
    ofs = "; ".join(formula % (a, a) for a in axes)
    if maxpool:
        inner = ("y[n, c, %s] = max over k in [0, K)%s of x[n, c, %s]; taps outside the input "
                 "are skipped (padding never wins)" % (", ".join("o" + a.lower() for a in axes),
                                                        "" if nd == 1 else "^%d" % nd,
                                  ", ".join("o%s*S - PAD + k%s*DIL" % (a.lower(), a.lower()) for a in axes)))
    else:
        inner = ("y[n, c, %s] = (1 / K%s) * sum over k in [0, K)%s of x[n, c, %s], where taps "
                 "outside the input count as zero" % (", ".join("o" + a.lower() for a in axes),
                                                      "" if nd == 1 else "^%d" % nd,
                                                      "" if nd == 1 else "^%d" % nd,
                                                       ", ".join("o%s*S - PAD + k%s" % (a.lower(), a.lower()) for a in axes)))
    if nd == 1:
        inner = inner.replace("+ kl*DIL", "+ k*DIL").replace("+ kl]", "+ k]")
    desc = ("%s Input x is a row-major fp32 tensor %s; output y is %s with %s. %s. "
            "K, S, PAD%s are params of the shape set (pass them to your kernel; they differ "
            "between shape sets). Inputs are normal(0, 1)."
            % (what, layout, olayout, ofs, inner, ", DIL" if maxpool else ""))
    return make_task(
        num, "pooling", title, desc, params, shapes,
        [buf("x", ["N", "C"] + axes, "in", init=normal(0, 1)), buf("y", out_shape, "out")],
        src, plan,
        tolerance={"atol": 0, "rtol": 0} if maxpool else {"atol": 1e-5, "rtol": 1e-4},
        tolerance_note=("Max is exact: the output must match bit for bit." if maxpool else
                        "Averages of K^d normal values; atol 1e-5 admits any summation order."),
        flops="%s * %s" % (nout, "*".join(["K"] * nd)),
        bytes_="4 * (%s) + 4 * (%s)" % (nin, nout), trials=2,
        reference_note="%s; PyTorch eager calls its %s pooling kernel" % (
            how, "max" if maxpool else "average"))


def tasks():
    return [
        pool_task(41, 1, True, [
            {"name": "default", "N": 64, "C": 192, "L": 65536, "K": 8, "S": 1, "PAD": 4, "DIL": 3},
            {"name": "small", "N": 3, "C": 7, "L": 1000, "K": 5, "S": 2, "PAD": 2, "DIL": 2},
            {"name": "tiny", "N": 2, "C": 3, "L": 33, "K": 3, "S": 1, "PAD": 1, "DIL": 1}],
            "Max pooling 1D"),
        pool_task(42, 2, True, [
            {"name": "default", "N": 32, "C": 64, "H": 512, "W": 512, "K": 4, "S": 1, "PAD": 1, "DIL": 1},
            {"name": "small", "N": 3, "C": 5, "H": 100, "W": 67, "K": 3, "S": 2, "PAD": 1, "DIL": 2},
            {"name": "tiny", "N": 1, "C": 2, "H": 9, "W": 7, "K": 2, "S": 2, "PAD": 1, "DIL": 1}],
            "Max pooling 2D"),
        pool_task(43, 3, True, [
            {"name": "default", "N": 16, "C": 32, "D": 128, "H": 128, "W": 128, "K": 3, "S": 2, "PAD": 1, "DIL": 3},
            {"name": "small", "N": 2, "C": 3, "D": 20, "H": 17, "W": 33, "K": 3, "S": 2, "PAD": 1, "DIL": 2},
            {"name": "tiny", "N": 1, "C": 2, "D": 5, "H": 6, "W": 7, "K": 2, "S": 1, "PAD": 0, "DIL": 1}],
            "Max pooling 3D"),
        pool_task(44, 1, False, [
            {"name": "default", "N": 64, "C": 128, "L": 65536, "K": 8, "S": 1, "PAD": 4},
            {"name": "small", "N": 3, "C": 7, "L": 1000, "K": 5, "S": 2, "PAD": 2},
            {"name": "tiny", "N": 2, "C": 3, "L": 33, "K": 3, "S": 1, "PAD": 1}],
            "Average pooling 1D"),
        pool_task(45, 2, False, [
            {"name": "default", "N": 16, "C": 64, "H": 2048, "W": 2048, "K": 11, "S": 11, "PAD": 0},
            {"name": "small", "N": 3, "C": 5, "H": 100, "W": 67, "K": 3, "S": 2, "PAD": 1},
            {"name": "tiny", "N": 1, "C": 2, "H": 9, "W": 7, "K": 2, "S": 2, "PAD": 0}],
            "Average pooling 2D"),
        pool_task(46, 3, False, [
            {"name": "default", "N": 16, "C": 32, "D": 128, "H": 128, "W": 256, "K": 3, "S": 2, "PAD": 1},
            {"name": "small", "N": 2, "C": 3, "D": 20, "H": 17, "W": 33, "K": 3, "S": 2, "PAD": 1},
            {"name": "tiny", "N": 1, "C": 2, "D": 5, "H": 6, "W": 7, "K": 2, "S": 2, "PAD": 1}],
            "Average pooling 3D"),
    ]
