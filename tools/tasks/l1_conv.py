"""Level 1 convolutions (KernelBench 50, 54-87).

Standard and transposed convolutions (groups, per-axis stride, padding, dilation and
output padding) run as im2col / col2im + cuBLAS SGEMM (tools/tasks/conv_gemm.py), the
way cuDNN runs fp32 convolutions. The depthwise ones (G = CI, l1_82-l1_85, and l1_86's
depthwise stage) run dwconv2d_ref, a direct kernel on shared-memory input tiles; the
generic N-d direct kernel (gen_source: one thread per output element, fp32 fused
multiply-adds) remains the fallback for a convolution whose column buffer cannot fit.
"""
from taskgen import make_task, buf, normal, uniform, launch, gemm, i32, u64, scratch, problem
import conv_gemm
from check_tasks import ev

AXES = {1: ["L"], 2: ["H", "W"], 3: ["D", "H", "W"]}
AXNAME = {"L": "length", "D": "depth", "H": "height", "W": "width"}

SRC_HEAD = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// {kernel}: one thread per output element (grid-stride, 64-bit indices),
// fp32 fused multiply-adds over the input channels of the output's group and
// the kernel taps, in a fixed order. A direct convolution: PyTorch eager calls
// cuDNN (which picks implicit GEMM, Winograd or FFT algorithms).
'''

STD_BODY = r'''
extern "C" __global__ void {kernel}(const float* __restrict__ x, const float* __restrict__ w,
        const float* __restrict__ bias, float* __restrict__ y, int N, int CI, int CO, int G,
        int has_bias, {sig}, unsigned long long total)
{{
        int cig = CI / G, cog = CO / G;
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long o = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             o < total; o += stride) {{
                unsigned long long r = o;
{decode}
                int co = (int)(r % CO);
                int n = (int)(r / CO);
                int g = co / cog;
                float acc = has_bias ? bias[co] : 0.0f;
                for (int c = 0; c < cig; c++) {{
                        int ci = g * cig + c;
                        const float* xp = x + ((unsigned long long)n * CI + ci) * {in_size};
                        const float* wp = {wbase};
{loops}
                }}
                y[o] = acc;
        }}
}}
'''


def gen_source(num, nd, transposed, what, kernel):
    ax = AXES[nd]
    sig = ", ".join(["int I%s" % a for a in ax] + ["int O%s" % a for a in ax] +
                    ["int K%s" % a for a in ax] + ["int S%s" % a for a in ax] +
                    ["int P%s" % a for a in ax] + ["int DL%s" % a for a in ax])
    decode = []
    for a in reversed(ax):
        decode.append("                int o%s = (int)(r %% O%s);\n                r /= O%s;" % (a.lower(), a, a))
    in_size = " * ".join("(unsigned long long)I%s" % a for a in ax)
    ksize = " * ".join("K%s" % a for a in ax)
    if transposed:
        # weight [CI, CO/G, K...]
        wbase = "w + ((unsigned long long)ci * cog + (co - g * cog)) * (%s)" % ksize
    else:
        # weight [CO, CI/G, K...]
        wbase = "w + ((unsigned long long)co * cig + c) * (%s)" % ksize
    loops = []
    ind = "                        "
    for a in ax:
        al = a.lower()
        loops.append("%sfor (int k%s = 0; k%s < K%s; k%s++) {" % (ind, al, al, a, al))
        ind += "        "
        if transposed:
            loops.append("%sint t%s = o%s + P%s - k%s * DL%s;" % (ind, al, al, a, al, a))
            loops.append("%sif (t%s < 0 || t%s %% S%s != 0)\n%s        continue;" % (ind, al, al, a, ind))
            loops.append("%sint i%s = t%s / S%s;" % (ind, al, al, a))
        else:
            loops.append("%sint i%s = o%s * S%s - P%s + k%s * DL%s;" % (ind, al, al, a, a, al, a))
            loops.append("%sif (i%s < 0)\n%s        continue;" % (ind, al, ind))
        loops.append("%sif (i%s >= I%s)\n%s        continue;" % (ind, al, a, ind))
    xi = "i" + ax[0].lower()
    wi = "k" + ax[0].lower()
    for a in ax[1:]:
        xi = "(%s) * I%s + i%s" % (xi, a, a.lower())
        wi = "(%s) * K%s + k%s" % (wi, a, a.lower())
    loops.append("%sacc = fmaf(xp[(unsigned long long)(%s)], wp[%s], acc);" % (ind, xi, wi))
    for a in ax:
        ind = ind[:-8]
        loops.append("%s}" % ind)
    return (SRC_HEAD.format(problem=problem(num)["problem"], what=what, kernel=kernel) +
            STD_BODY.format(kernel=kernel, sig=sig, decode="\n".join(decode), in_size=in_size,
                            wbase=wbase, loops="\n".join(loops)))


DW_TILE = 32     # output tile side of dwconv2d_ref (a 32 x 8 block, 4 rows per thread)
DW_SMEM = 8192   # floats of its static shared input tile (32 KiB)
DW_SRC = r'''
// dwconv2d_ref: a depthwise 2D convolution (CI = G: one input channel per group, CO/G
// filters on it) with per-axis stride, padding and dilation. A block of 32 x 8 threads
// computes a 32 x 32 tile of one output plane (four rows per thread): it stages the
// input rows and columns the tile reads (halo and zero padding included) in shared
// memory, then each output sums its KH*KW taps in a fixed order (fp32 fused
// multiply-adds, bias first). Planes beyond grid z loop. The staged input fits
// DW_SMEM floats for every shape set (the generator checks).
#define DW_TILE 32
#define DW_SMEM @@DW_SMEM@@
extern "C" __global__ void __launch_bounds__(256) dwconv2d_ref(const float* __restrict__ x,
        const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y, int N,
        int CO, int G, int IH, int IW, int OH, int OW, int KH, int KW, int SH, int SW, int PH,
        int PW, int DH, int DW, int has_bias)
{
        __shared__ float tile[DW_SMEM];
        int th = (DW_TILE - 1) * SH + (KH - 1) * DH + 1;
        int tw = (DW_TILE - 1) * SW + (KW - 1) * DW + 1;
        int ox0 = blockIdx.x * DW_TILE, oy0 = blockIdx.y * DW_TILE;
        int ix0 = ox0 * SW - PW, iy0 = oy0 * SH - PH;
        int cog = CO / G;
        for (unsigned long long plane = blockIdx.z; plane < (unsigned long long)N * CO; plane += gridDim.z) {
                int co = (int)(plane % CO);
                unsigned long long n = plane / CO;
                const float* xp = x + (n * G + co / cog) * (unsigned long long)IH * IW;
                __syncthreads();        /* the previous plane's taps are read */
                for (int r = threadIdx.y; r < th; r += blockDim.y) {
                        int iy = iy0 + r;
                        for (int q = threadIdx.x; q < tw; q += blockDim.x) {
                                int ix = ix0 + q;
                                tile[r * tw + q] = iy >= 0 && iy < IH && ix >= 0 && ix < IW ?
                                                   xp[(unsigned long long)iy * IW + ix] : 0.0f;
                        }
                }
                __syncthreads();
                const float* wp = w + (unsigned long long)co * KH * KW;
                float b = has_bias ? bias[co] : 0.0f;
                int ox = ox0 + threadIdx.x;
                float* yp = y + plane * OH * (unsigned long long)OW;
                for (int t = threadIdx.y; t < DW_TILE; t += blockDim.y) {
                        int oy = oy0 + t;
                        if (oy >= OH || ox >= OW)
                                continue;
                        const float* tp = tile + t * SH * tw + threadIdx.x * SW;
                        float acc = b;
                        for (int kh = 0; kh < KH; kh++)
                                for (int kw = 0; kw < KW; kw++)
                                        acc = fmaf(tp[kh * DH * tw + kw * DW], wp[kh * KW + kw], acc);
                        yp[(unsigned long long)oy * OW + ox] = acc;
                }
        }
}
'''


def dw_launch(x, w, bias, y, N, CO, G, I, O, K, S, P, D, has_bias, shapes):
    """The dwconv2d_ref launch; I, O, K, S, P, D: (H, W) expression pairs; shapes: the task's
    shape sets, each checked to stage at most DW_SMEM floats."""
    floats = "((%d - 1) * (%s) + ((%s) - 1) * (%s) + 1) * ((%d - 1) * (%s) + ((%s) - 1) * (%s) + 1)" % (
        DW_TILE, S[0], K[0], D[0], DW_TILE, S[1], K[1], D[1])
    for sh_ in shapes:
        n = ev(floats, {k: v for k, v in sh_.items() if k != "name"})
        if n > DW_SMEM:
            raise ValueError("dwconv2d_ref: shape %s stages %d floats > %d" % (sh_["name"], n, DW_SMEM))
    return launch("dwconv2d_ref", ["ceil_div(%s, %d)" % (O[1], DW_TILE), "ceil_div(%s, %d)" % (O[0], DW_TILE),
                                   "min((%s) * (%s), 65535)" % (N, CO)], [32, 8],
                  [x, w, bias, y, i32(N), i32(CO), i32(G)] + [i32(v) for v in list(I) + list(O) + list(K) +
                                                              list(S) + list(P) + list(D)] + [i32(has_bias)])


DIRECT_NOTE = ("direct convolution, one thread per output (PyTorch eager calls cuDNN; "
               "KernelBench's published times used cuDNN with TF32 allowed, PyTorch's "
               "default for convolutions)")
DEPTHWISE_NOTE = ("a direct depthwise kernel: each block stages a 32x32 output tile's input "
                  "(with halo) in shared memory, one pass over the input and the output (a "
                  "depthwise convolution is one KxK filter per channel, a GEMM with M = 1 per "
                  "(image, channel), which cuBLAS cannot run faster); PyTorch eager runs a "
                  "direct depthwise kernel as well (cuDNN's or its own)")
GEMM_HEAD = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
'''


def out_expr(a, transposed):
    if transposed:
        return "(%s - 1) * S%s - 2 * PAD%s + DIL%s * (K%s - 1) + OPAD%s + 1" % (a, a, a, a, a, a)
    return "(%s + 2 * PAD%s - DIL%s * (K%s - 1) - 1) / S%s + 1" % (a, a, a, a, a)


def conv_args(nd, transposed, x, w, bias, y, ci="CI", co="CO", g="G", has_bias=0, kvals=None,
              pvals=None, svals=None, dvals=None, outs=None):
    ax = AXES[nd]
    outs = outs or [out_expr(a, transposed) for a in ax]
    kv = kvals or ["K%s" % a for a in ax]
    sv = svals or ["S%s" % a for a in ax]
    pv = pvals or ["PAD%s" % a for a in ax]
    dv = dvals or ["DIL%s" % a for a in ax]
    total = " * ".join(["N", co] + ["(%s)" % o for o in outs])
    args = ([x, w, bias, y, i32("N"), i32(ci), i32(co), i32(g), i32(str(has_bias))] +
            [i32(a) for a in ax] + [i32(o) for o in outs] + [i32(k) for k in kv] +
            [i32(s) for s in sv] + [i32(p) for p in pv] + [i32(d) for d in dv] + [u64(total)])
    return args, total


CONV1D_EXAMPLE = r'''
// A minimal correct candidate for a 1D convolution with groups, stride,
// padding and dilation: one thread per output element, fp32 accumulation.
extern "C" __global__ void conv1d(const float* x, const float* w, float* y, int N, int CI, int CO,
                                  int G, int L, int OL, int K, int S, int PAD, int DIL)
{
        long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        long long total = (long long)N * CO * OL;
        if (o >= total)
                return;
        int ol = (int)(o % OL);
        int co = (int)((o / OL) % CO);
        int n = (int)(o / ((long long)OL * CO));
        int cig = CI / G, g = co / (CO / G);
        float acc = 0.0f;
        for (int c = 0; c < cig; c++) {
                const float* xr = x + ((long long)n * CI + g * cig + c) * L;
                const float* wr = w + ((long long)co * cig + c) * K;
                for (int k = 0; k < K; k++) {
                        int i = ol * S - PAD + k * DIL;
                        if (i >= 0 && i < L)
                                acc += xr[i] * wr[k];
                }
        }
        y[o] = acc;
}
'''


def conv_task(num, nd, transposed, title, default, small, tiny, bias=False, note="", trials=1,
              example=None, slower="", exclude=()):
    """default/small/tiny: dicts with N, CI, CO, G and per-axis size, K, S, PAD, DIL(, OPAD).
    slower: why the reference stays slower than PyTorch at the default size, if it does;
    exclude: conv_gemm forms a measurement ruled out for this task."""
    ax = AXES[nd]
    kernel = "conv%s%dd_ref" % ("_transpose" if transposed else "", nd)
    params = {"N": "batch", "CI": "input channels", "CO": "output channels",
              "G": "groups (divides CI and CO)"}
    for a in ax:
        params[a] = "input " + AXNAME[a]
        params["K" + a] = "kernel size along " + AXNAME[a]
        params["S" + a] = "stride along " + AXNAME[a]
        params["PAD" + a] = "padding along " + AXNAME[a]
        params["DIL" + a] = "dilation along " + AXNAME[a]
        if transposed:
            params["OPAD" + a] = "output padding along " + AXNAME[a]
    shapes = []
    for name, s in (("default", default), ("small", small), ("tiny", tiny)):
        d = {"name": name}
        for k in params:
            if k in s:
                d[k] = s[k]
            elif k.startswith(("S", "DIL")) and k not in ("N",):
                d[k] = 1
            elif k.startswith(("PAD", "OPAD")):
                d[k] = 0
            elif k == "G":
                d[k] = 1
            else:
                raise KeyError("%s: shape %s lacks %s" % (num, name, k))
        shapes.append(d)
    outs = [out_expr(a, transposed) for a in ax]
    ksz = " * ".join("K%s" % a for a in ax)
    if transposed:
        wshape = ["CI", "CO / G"] + ["K%s" % a for a in ax]
        fan_in = "(CO / G) * " + ksz
    else:
        wshape = ["CO", "CI / G"] + ["K%s" % a for a in ax]
        fan_in = "(CI / G) * " + ksz
    bufs = [buf("x", ["N", "CI"] + ax, "in", init=normal(0, 1)),
            buf("w", wshape, "in", init=uniform(-1, 1, fan_in=fan_in))]
    if bias:
        bufs.append(buf("bias", ["CO"], "in", init=uniform(-1, 1, fan_in=fan_in)))
    bufs.append(buf("y", ["N", "CO"] + ["(%s)" % o for o in outs] if False else ["N", "CO"] + outs, "out"))
    args, total = conv_args(nd, transposed, "x", "w", "bias" if bias else "w", "y",
                            has_bias=1 if bias else 0)
    lay = {1: "NCL", 2: "NCHW", 3: "NCDHW"}[nd]
    xs = "[N, CI, %s]" % ", ".join(ax)
    ys = "[N, CO, %s]" % ", ".join("O" + a for a in ax)
    if transposed:
        what = ("%dD transposed convolution (nn.ConvTranspose%dd, bias=%s) with groups, "
                "per-axis stride, padding, output padding and dilation." % (nd, nd, bias))
        math = ("O_a = (I_a - 1)*S_a - 2*PAD_a + DIL_a*(K_a - 1) + OPAD_a + 1 for each spatial "
                "axis a. With cig = CI/G and cog = CO/G, output channel co is in group g = co / cog "
                "and y[n, co, o] = sum over c in [0, cig), k in [0, K)^%d of x[n, g*cig + c, i] * "
                "w[g*cig + c, co - g*cog, k], over the taps where, on every axis, o_a + PAD_a - "
                "k_a*DIL_a is divisible by S_a and i_a = (o_a + PAD_a - k_a*DIL_a) / S_a lies in "
                "[0, I_a) (the gradient of a convolution; no bias). Weight layout [CI, CO/G, %s]."
                % (nd, ", ".join("K" + a for a in ax)))
    else:
        what = ("%dD convolution (nn.Conv%dd, bias=%s) with groups, per-axis stride, "
                "zero padding and dilation." % (nd, nd, bias))
        math = ("O_a = floor((I_a + 2*PAD_a - DIL_a*(K_a - 1) - 1) / S_a) + 1 for each spatial "
                "axis a. With cig = CI/G and cog = CO/G, output channel co is in group "
                "g = co / cog and y[n, co, o] = %ssum over c in [0, cig), k in [0, K)^%d of "
                "x[n, g*cig + c, o*S - PAD + k*DIL] * w[co, c, k] (per axis; taps outside the "
                "input are zero padding). Weight layout [CO, CI/G, %s]."
                % ("bias[co] + " if bias else "", nd, ", ".join("K" + a for a in ax)))
    desc = ("%s x is a row-major %s fp32 tensor %s, y is %s. %s All sizes, kernel sizes, "
            "strides, paddings, dilations and groups are params of the shape set (they differ "
            "between shape sets). Inputs normal(0, 1); weights%s uniform(-1, 1)/sqrt(fan_in) as "
            "PyTorch initializes them. Accumulate in fp32 (or better); TF32 is not accurate "
            "enough. %s" % (what, lay, xs, ys, math, " and bias" if bias else "", note))
    prod_k = ksz
    if transposed:
        flops = "2 * N * CI * (CO / G) * %s * %s" % (" * ".join(ax), prod_k)
    else:
        flops = "2 * N * CO * (CI / G) * %s * %s" % (" * ".join("(%s)" % o for o in outs), prod_k)
    nin = " * ".join(["N", "CI"] + ax)
    nw = " * ".join("(%s)" % s for s in wshape)
    dflt = {k: v for k, v in shapes[0].items() if k != "name"}
    depthwise = dflt["G"] > 1 and dflt["G"] == dflt["CI"] == dflt["CO"]
    conv = conv_gemm.Conv(nd, transposed, "N", "CI", "CO", "G", ax, outs, ["K" + a for a in ax],
                          ["S" + a for a in ax], ["PAD" + a for a in ax], ["DIL" + a for a in ax])
    choice, why = (None, "depthwise") if depthwise else conv_gemm.choose(
        conv, dflt, shapes=[{k: v for k, v in d.items() if k != "name"} for d in shapes], exclude=exclude)
    if depthwise and nd == 2 and not transposed:
        src = (GEMM_HEAD.format(problem=problem(num)["problem"], what=what) +
               DW_SRC.replace("@@DW_SMEM@@", str(DW_SMEM)))
        plan = [dw_launch("x", "w", "bias" if bias else "w", "y", "N", "CO", "G", ax, outs,
                          ["K" + a for a in ax], ["S" + a for a in ax], ["PAD" + a for a in ax],
                          ["DIL" + a for a in ax], "1" if bias else "0", shapes)]
        scr = []
        ref_note = DEPTHWISE_NOTE
    elif choice is None:
        src = gen_source(num, nd, transposed, what, kernel)
        plan = [launch(kernel, ["min(ceil_div(%s, 256), 1048576)" % total], [256], args)]
        scr = []
        ref_note = DIRECT_NOTE + "; " + why
    else:
        plan, scr = conv_gemm.plan(conv, choice[0], choice[1], bias="bias" if bias else None)
        src = (GEMM_HEAD.format(problem=problem(num)["problem"], what=what) +
               conv_gemm.source(form=choice[0]))
        ref_note = conv_gemm.note(choice[0], choice[1]) + "; " + conv_gemm.CUDNN + slower
    return make_task(
        num, "conv", title, desc.strip(), params, shapes, bufs, src, plan, scratch_bufs=scr,
        tolerance={"atol": 2e-4, "rtol": 1e-3},
        tolerance_note=("Outputs are O(0.5) (fan_in-scaled weights). Correct fp32 convolutions "
                        "in any order or algorithm (implicit GEMM, fp32 Winograd) agree to ~1e-5; "
                        "TF32 tensor-core math errs by ~3e-4 and fails."),
        flops=flops, bytes_="4 * (%s + %s + %s)" % (nin, nw, total), trials=trials,
        reference_note=ref_note, example=example)


def sq(nd, size, k, s=1, p=0, d=1, op=None):
    """Per-axis params from scalars or tuples."""
    ax = AXES[nd]
    out = {}

    def v(x, i):
        return x[i] if isinstance(x, (list, tuple)) else x
    for i, a in enumerate(ax):
        out[a] = v(size, i)
        out["K" + a] = v(k, i)
        out["S" + a] = v(s, i)
        out["PAD" + a] = v(p, i)
        out["DIL" + a] = v(d, i)
        if op is not None:
            out["OPAD" + a] = v(op, i)
    return out


def sh(N, CI, CO, G=1, **kw):
    d = {"N": N, "CI": CI, "CO": CO, "G": G}
    d.update(kw)
    return d


def standard():
    T = []
    T.append(conv_task(50, 2, False, "Conv2d 11x11, stride 4, padding 2, with bias (AlexNet conv1)",
                       sh(256, 3, 96, **sq(2, 224, 11, 4, 2)),
                       sh(3, 3, 17, **sq(2, (61, 50), 5, 3, 2)),
                       sh(1, 2, 3, **sq(2, (9, 7), 3, 2, 1)), bias=True,
                       note="KernelBench 50 is the first layer of AlexNet: nn.Conv2d(3, 96, "
                            "kernel_size=11, stride=4, padding=2) with its default bias."))
    T.append(conv_task(54, 3, False, "Conv3d, square input, square kernel",
                       sh(16, 3, 64, **sq(3, 64, 3)),
                       sh(2, 3, 5, **sq(3, (9, 17, 13), 3)),
                       sh(1, 2, 3, **sq(3, (4, 5, 6), 2))))
    T.append(conv_task(55, 2, False, "Conv2d, asymmetric input, square kernel",
                       sh(8, 64, 128, **sq(2, (512, 1024), 3)),
                       sh(2, 5, 7, **sq(2, (61, 130), 3)),
                       sh(1, 2, 3, **sq(2, (6, 9), 3))))
    T.append(conv_task(56, 2, False, "Conv2d, asymmetric input, asymmetric kernel",
                       sh(8, 64, 128, **sq(2, (512, 256), (5, 7))),
                       sh(2, 5, 7, **sq(2, (61, 130), (5, 7))),
                       sh(1, 2, 3, **sq(2, (6, 9), (3, 5)))))
    T.append(conv_task(59, 3, False, "Conv3d, asymmetric input, square kernel",
                       sh(16, 3, 64, **sq(3, (10, 256, 256), 3)),
                       sh(2, 3, 5, **sq(3, (5, 33, 40), 3)),
                       sh(1, 2, 3, **sq(3, (3, 5, 6), 3))))
    T.append(conv_task(60, 3, False, "Conv3d, square input, asymmetric kernel",
                       sh(16, 3, 64, **sq(3, 64, (3, 5, 7))),
                       sh(2, 3, 5, **sq(3, (9, 17, 13), (3, 5, 7))),
                       sh(1, 2, 3, **sq(3, (4, 5, 6), (2, 3, 3)))))
    T.append(conv_task(63, 2, False, "Conv2d, square input, square kernel (16 -> 128 channels)",
                       sh(16, 16, 128, **sq(2, 1024, 3)),
                       sh(2, 5, 7, **sq(2, 77, 3)),
                       sh(1, 2, 3, **sq(2, 7, 3))))
    T.append(conv_task(62, 2, False, "Conv2d, square input, asymmetric kernel",
                       sh(8, 32, 64, **sq(2, 512, (5, 9))),
                       sh(2, 5, 7, **sq(2, 77, (5, 9))),
                       sh(1, 2, 3, **sq(2, 11, (3, 5)))))
    T.append(conv_task(66, 3, False, "Conv3d, asymmetric input, asymmetric kernel",
                       sh(8, 3, 64, **sq(3, (16, 128, 128), (3, 5, 7))),
                       sh(2, 3, 5, **sq(3, (7, 20, 33), (3, 5, 7))),
                       sh(1, 2, 3, **sq(3, (4, 6, 8), (3, 3, 5)))))
    ol = out_expr("L", False)
    T.append(conv_task(67, 1, False, "Conv1d",
                       sh(32, 64, 128, **sq(1, 131072, 3)),
                       sh(3, 5, 7, **sq(1, 1000, 3)),
                       sh(2, 2, 3, **sq(1, 33, 3)),
                       example=(CONV1D_EXAMPLE, [launch(
                           "conv1d", ["ceil_div(N * CO * (%s), 256)" % ol], [256],
                           ["x", "w", "y", i32("N"), i32("CI"), i32("CO"), i32("G"), i32("L"), i32(ol),
                            i32("KL"), i32("SL"), i32("PADL"), i32("DILL")])])))
    T.append(conv_task(76, 1, False, "Conv1d, dilated and strided",
                       sh(64, 64, 128, **sq(1, 524280, 3, 3, 0, 4)),
                       sh(3, 5, 7, **sq(1, 1000, 3, 3, 0, 4)),
                       sh(2, 2, 3, **sq(1, 33, 3, 2, 0, 2))))
    T.append(conv_task(80, 2, False, "Conv2d, asymmetric kernel, dilated and padded",
                       sh(8, 32, 64, **sq(2, 512, (5, 9), 1, (2, 4), (2, 3))),
                       sh(2, 5, 7, **sq(2, (61, 77), (5, 9), 1, (2, 4), (2, 3))),
                       sh(1, 2, 3, **sq(2, (9, 13), (3, 5), 1, (1, 2), (2, 2)))))
    # depthwise: G = CI = CO
    T.append(conv_task(82, 2, False, "Depthwise Conv2d, square input, square kernel",
                       sh(16, 64, 64, 64, **sq(2, 512, 3)),
                       sh(2, 7, 7, 7, **sq(2, (61, 130), 3)),
                       sh(1, 3, 3, 3, **sq(2, (6, 9), 3)),
                       note="Depthwise: G = CI = CO, one 3x3 filter per channel."))
    T.append(conv_task(83, 2, False, "Depthwise Conv2d with a (K, 1) kernel",
                       sh(64, 8, 8, 8, **sq(2, 512, (3, 1))),
                       sh(2, 7, 7, 7, **sq(2, (61, 130), (3, 1))),
                       sh(1, 3, 3, 3, **sq(2, (6, 9), (3, 1))),
                       note="Depthwise (G = CI = CO) with kernel_size=(K, 1), as KernelBench 83."))
    T.append(conv_task(84, 2, False, "Depthwise Conv2d, asymmetric input, square kernel",
                       sh(64, 128, 128, 128, **sq(2, (256, 512), 3)),
                       sh(2, 7, 7, 7, **sq(2, (61, 130), 3)),
                       sh(1, 3, 3, 3, **sq(2, (6, 9), 3)),
                       note="Depthwise: G = CI = CO."))
    T.append(conv_task(85, 2, False, "Depthwise Conv2d, asymmetric input, asymmetric kernel",
                       sh(32, 128, 128, 128, **sq(2, (128, 256), (3, 7))),
                       sh(2, 7, 7, 7, **sq(2, (61, 130), (3, 7), (1, 2), (1, 3), (1, 2))),
                       sh(1, 3, 3, 3, **sq(2, (6, 9), (3, 5))),
                       note="Depthwise: G = CI = CO."))
    return T


def transposed():
    T = []
    T.append(conv_task(57, 2, True, "ConvTranspose2d, square input, square kernel",
                       sh(8, 64, 64, **sq(2, 1024, 3, op=0)),
                       sh(2, 5, 7, **sq(2, (61, 77), 3, op=0)),
                       sh(1, 2, 3, **sq(2, (5, 7), 3, op=0))))
    T.append(conv_task(58, 3, True, "ConvTranspose3d, asymmetric input, asymmetric kernel",
                       sh(16, 32, 16, **sq(3, (16, 32, 64), (3, 5, 7), op=0)),
                       sh(2, 5, 7, **sq(3, (5, 9, 11), (3, 5, 7), op=0)),
                       sh(1, 2, 3, **sq(3, (3, 4, 5), (2, 3, 3), op=0))))
    T.append(conv_task(61, 3, True, "ConvTranspose3d, square input, square kernel",
                       sh(8, 48, 48, **sq(3, 64, 3, op=0)),
                       sh(2, 5, 7, **sq(3, (5, 9, 11), 3, op=0)),
                       sh(1, 2, 3, **sq(3, (3, 4, 5), 3, op=0))))
    T.append(conv_task(64, 1, True, "ConvTranspose1d",
                       sh(64, 128, 128, **sq(1, 65536, 3, op=0)),
                       sh(3, 5, 7, **sq(1, 1000, 3, op=0)),
                       sh(2, 2, 3, **sq(1, 33, 3, op=0))))
    T.append(conv_task(65, 2, True, "ConvTranspose2d, square input, asymmetric kernel",
                       sh(8, 64, 64, **sq(2, 512, (3, 7), op=0)),
                       sh(2, 5, 7, **sq(2, (61, 77), (3, 7), op=0)),
                       sh(1, 2, 3, **sq(2, (5, 7), (3, 5), op=0))))
    T.append(conv_task(68, 3, True, "ConvTranspose3d, square input, asymmetric kernel",
                       sh(16, 32, 64, **sq(3, 64, (3, 5, 5), op=0)),
                       sh(2, 5, 7, **sq(3, (5, 9, 11), (3, 5, 5), op=0)),
                       sh(1, 2, 3, **sq(3, (3, 4, 5), (3, 3, 2), op=0))))
    T.append(conv_task(69, 2, True, "ConvTranspose2d, asymmetric input, asymmetric kernel",
                       sh(64, 64, 128, **sq(2, (128, 256), (3, 5), op=0)),
                       sh(2, 5, 7, **sq(2, (33, 50), (3, 5), op=0)),
                       sh(1, 2, 3, **sq(2, (5, 6), (3, 2), op=0)),
                       slower=("; slower than PyTorch at the default size: 515 GFLOP (the direct "
                               "sum) that cuDNN ran in 4.80 ms on an H200 with TF32 off "
                               "(tasks/baselines/nvidia-h200.json), 107 TFLOP/s, above the "
                               "fp32 FMA peak, so an FFT or Winograd algorithm with fewer "
                               "multiplies; an fp32 SGEMM reference at that peak needs over "
                               "7.7 ms")))
    T.append(conv_task(70, 3, True, "ConvTranspose3d, asymmetric input, square kernel",
                       sh(8, 48, 24, **sq(3, 96, 3, op=0)),
                       sh(2, 5, 7, **sq(3, (5, 9, 11), 3, op=0)),
                       sh(1, 2, 3, **sq(3, (3, 4, 5), 3, op=0))))
    T.append(conv_task(71, 2, True, "ConvTranspose2d, asymmetric input, square kernel",
                       sh(8, 32, 32, **sq(2, (512, 1024), 3, op=0)),
                       sh(2, 5, 7, **sq(2, (61, 130), 3, op=0)),
                       sh(1, 2, 3, **sq(2, (5, 8), 3, op=0))))
    T.append(conv_task(72, 3, True, "ConvTranspose3d, strided, padded, output-padded, grouped",
                       sh(8, 32, 32, 4, **sq(3, (12, 24, 48), (3, 5, 7), 2, (1, 2, 3), 1, (1, 1, 1))),
                       sh(2, 6, 9, 3, **sq(3, (5, 9, 11), (3, 5, 7), 2, (1, 2, 3), 1, (1, 0, 1))),
                       sh(1, 4, 2, 2, **sq(3, (3, 4, 5), (3, 3, 5), 2, (1, 1, 2), 1, (1, 1, 1)))))
    T.append(conv_task(73, 3, True, "ConvTranspose3d, strided, padded, grouped",
                       sh(4, 32, 32, 4, **sq(3, (32, 64, 128), 3, 2, 1, 1, 0)),
                       sh(2, 6, 9, 3, **sq(3, (5, 9, 11), 3, 2, 1, 1, 0)),
                       sh(1, 4, 2, 2, **sq(3, (3, 4, 5), 3, 2, 1, 1, 0))))
    T.append(conv_task(74, 1, True, "ConvTranspose1d, dilated",
                       sh(32, 32, 64, **sq(1, 131072, 5, 1, 0, 3, op=0)),
                       sh(3, 5, 7, **sq(1, 1000, 5, 1, 0, 3, op=0)),
                       sh(2, 2, 3, **sq(1, 33, 3, 1, 0, 2, op=0))))
    T.append(conv_task(75, 2, True, "ConvTranspose2d, strided, grouped, padded, dilated",
                       sh(16, 32, 64, 4, **sq(2, (128, 256), (3, 5), (2, 3), (1, 2), (2, 1), 0)),
                       sh(2, 6, 9, 3, **sq(2, (33, 50), (3, 5), (2, 3), (1, 2), (2, 1), 0)),
                       sh(1, 4, 2, 2, **sq(2, (5, 6), (3, 3), (2, 2), (1, 1), (1, 2), 0))))
    T.append(conv_task(77, 3, True, "ConvTranspose3d, padded, dilated, strided",
                       sh(16, 32, 64, **sq(3, (16, 32, 32), 3, 2, 1, 2, 0)),
                       sh(2, 5, 7, **sq(3, (5, 9, 11), 3, 2, 1, 2, 0)),
                       sh(1, 2, 3, **sq(3, (3, 4, 5), 3, 2, 1, 2, 0))))
    T.append(conv_task(78, 2, True, "ConvTranspose2d, asymmetric kernel, padded",
                       sh(8, 32, 32, **sq(2, (512, 1024), (3, 7), 1, (1, 3), 1, 0)),
                       sh(2, 5, 7, **sq(2, (61, 130), (3, 7), 1, (1, 3), 1, 0)),
                       sh(1, 2, 3, **sq(2, (5, 8), (3, 5), 1, (1, 2), 1, 0))))
    T.append(conv_task(79, 1, True, "ConvTranspose1d, padded, strided, dilated",
                       sh(16, 32, 64, **sq(1, 131072, 3, 2, 1, 2, 0)),
                       sh(3, 5, 7, **sq(1, 1000, 3, 2, 1, 2, 0)),
                       sh(2, 2, 3, **sq(1, 33, 3, 3, 1, 2, 0))))
    T.append(conv_task(81, 2, True, "ConvTranspose2d, dilated, padded, strided (stride 5)",
                       sh(16, 32, 64, **sq(2, (64, 128), 3, 5, 1, 2, 0)),
                       sh(2, 5, 7, **sq(2, (17, 33), 3, 5, 1, 2, 0)),
                       sh(1, 2, 3, **sq(2, (4, 5), 3, 3, 1, 2, 0)),
                       # H100, 2026-11-27: the implicit form took 9.31 ms against col2im's 2.76
                       # (25 phases, most without a tap; stores 5 apart along a row)
                       exclude=("implicit",)))
    return T


SEP_NOTE = ("Two convolutions in sequence: a depthwise KxK convolution (CI -> CI, groups = CI, "
            "stride S, padding PAD, dilation DIL, no bias) giving t, then a pointwise 1x1 "
            "convolution (CI -> CO, no bias): y[n, co, h, w] = sum_ci wp[co, ci] * t[n, ci, h, w], "
            "t[n, c, h, w] = sum_{kh, kw} x[n, c, h*S - PAD + kh*DIL, w*S - PAD + kw*DIL] * "
            "wd[c, kh, kw] (zero padding). OH = floor((H + 2*PAD - DIL*(K-1) - 1)/S) + 1, same for "
            "OW. x is NCHW [N, CI, H, W]; wd is [CI, 1, K, K]; wp is [CO, CI, 1, 1]; y is "
            "[N, CO, OH, OW]; all fp32 row-major. Inputs normal(0, 1); weights uniform(-1, 1)"
            "/sqrt(fan_in) (fan_in K*K and CI). Accumulate in fp32 (or better). The intermediate "
            "t need not be materialized (fusing both is the point).")


def separable():
    num = 86
    src = (GEMM_HEAD.format(problem=problem(num)["problem"],
                            what="depthwise-separable convolution: the depthwise KxK stage into "
                                 "scratch t with dwconv2d_ref.") +
           DW_SRC.replace("@@DW_SMEM@@", str(DW_SMEM)))
    o = "(H + 2 * PAD - DIL * (K - 1) - 1) / S + 1"
    o2 = "(W + 2 * PAD - DIL * (K - 1) - 1) / S + 1"
    dw_total = "N * CI * (%s) * (%s)" % (o, o2)
    pw_total = "N * CO * (%s) * (%s)" % (o, o2)
    shapes = [{"name": "default", "N": 16, "CI": 64, "CO": 128, "H": 512, "W": 512, "K": 3, "S": 1, "PAD": 1, "DIL": 1},
              {"name": "small", "N": 2, "CI": 5, "CO": 7, "H": 61, "W": 130, "K": 3, "S": 2, "PAD": 1, "DIL": 2},
              {"name": "tiny", "N": 1, "CI": 3, "CO": 2, "H": 6, "W": 9, "K": 3, "S": 1, "PAD": 1, "DIL": 1}]
    plan = [dw_launch("x", "wd", "wd", "t", "N", "CI", "CI", ["H", "W"], [o, o2], ["K", "K"], ["S", "S"],
                      ["PAD", "PAD"], ["DIL", "DIL"], "0", shapes),
            launch("rep_weights", ["ceil_div(N * CO * CI, 256)"], [256],
                   ["wp", "wrep", u64("CO * CI"), u64("N * CO * CI")]),
            gemm("wrep", "t", "y", "CO", "(%s) * (%s)" % (o, o2), "CI", batch="N")]
    params = {"N": "batch", "CI": "input channels", "CO": "output channels", "H": "height",
              "W": "width", "K": "depthwise kernel size", "S": "depthwise stride",
              "PAD": "depthwise padding", "DIL": "depthwise dilation"}
    return make_task(
        num, "conv", "Depthwise-separable Conv2d", SEP_NOTE, params,
        shapes,
        [buf("x", ["N", "CI", "H", "W"], "in", init=normal(0, 1)),
         buf("wd", ["CI", "1", "K", "K"], "in", init=uniform(-1, 1, fan_in="K * K")),
         buf("wp", ["CO", "CI", "1", "1"], "in", init=uniform(-1, 1, fan_in="CI")),
         buf("y", ["N", "CO", o, o2], "out")],
        src + "\n// The pointwise stage is, per image n, the GEMM y[n] (CO x OH*OW) = wp (CO x CI) @\n"
        "// t[n] (CI x OH*OW): rep_weights copies wp once per image into scratch so that one\n"
        "// strided-batched cuBLAS SGEMM (TF32 off, packed matrices) does all N images.\n" +
        REP_SRC.split("all N images.\n", 1)[1].replace("{{", "{").replace("}}", "}"),
        plan, scratch_bufs=[scratch("t", "f32", dw_total), scratch("wrep", "f32", "N * CO * CI")],
        tolerance={"atol": 2e-4, "rtol": 1e-3},
        tolerance_note="As for the other convolutions: fp32 in any order passes, TF32 fails.",
        flops="2 * (%s) * K * K + 2 * (%s) * CI" % (dw_total, pw_total),
        bytes_="4 * (N * CI * H * W + CI * K * K + CO * CI + %s)" % pw_total, trials=1,
        reference_note="a direct depthwise convolution (shared-memory input tiles) into scratch, "
                       "then the pointwise stage as "
                       "a strided-batched cuBLAS SGEMM (TF32 off); PyTorch eager: two cuDNN calls")


REP_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// A 1x1 convolution is, per image n, the GEMM y[n] (CO x HW) = w (CO x CI) @
// x[n] (CI x HW). rep_weights copies w once per image into scratch so that one
// strided-batched cuBLAS SGEMM (TF32 off, packed matrices) does all N images.
extern "C" __global__ void rep_weights(const float* __restrict__ w, float* __restrict__ wrep,
        unsigned long long per, unsigned long long total)
{{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                wrep[i] = w[i % per];
}}
'''


def pointwise():
    num = 87
    return make_task(
        num, "conv", "Pointwise (1x1) Conv2d",
        "A 1x1 convolution (nn.Conv2d(CI, CO, kernel_size=1, bias=False)): y[n, co, h, w] = "
        "sum_ci wt[co, ci, 0, 0] * x[n, ci, h, w]. x is a row-major NCHW fp32 tensor [N, CI, H, W], "
        "wt is [CO, CI, 1, 1], y is [N, CO, H, W]: per image, a [CO, CI] x [CI, H*W] matrix product. "
        "Inputs normal(0, 1); weights uniform(-1, 1)/sqrt(CI) as PyTorch initializes them. "
        "Accumulate in fp32 (or better); TF32 is not accurate enough.",
        {"N": "batch", "CI": "input channels", "CO": "output channels", "H": "height", "W": "width"},
        [{"name": "default", "N": 16, "CI": 64, "CO": 128, "H": 1024, "W": 1024},
         {"name": "small", "N": 2, "CI": 5, "CO": 7, "H": 61, "W": 130},
         {"name": "tiny", "N": 1, "CI": 2, "CO": 3, "H": 6, "W": 9}],
        [buf("x", ["N", "CI", "H", "W"], "in", init=normal(0, 1)),
         buf("w", ["CO", "CI", "1", "1"], "in", init=uniform(-1, 1, fan_in="CI")),
         buf("y", ["N", "CO", "H", "W"], "out")],
        REP_SRC.format(problem=problem(num)["problem"], what="pointwise convolution as a batched GEMM."),
        [launch("rep_weights", ["ceil_div(N * CO * CI, 256)"], [256],
                ["w", "wrep", u64("CO * CI"), u64("N * CO * CI")]),
         gemm("wrep", "x", "y", "CO", "H * W", "CI", batch="N")],
        scratch_bufs=[scratch("wrep", "f32", "N * CO * CI")],
        tolerance={"atol": 2e-4, "rtol": 1e-3},
        tolerance_note="As for the other convolutions: fp32 in any order passes, TF32 fails.",
        flops="2 * N * CO * CI * H * W", bytes_="4 * (N * CI * H * W + CO * CI + N * CO * H * W)",
        trials=1,
        reference_note="a strided-batched cuBLAS SGEMM per image (TF32 off) after replicating the "
                       "weights into scratch; PyTorch eager calls cuDNN, which runs a 1x1 "
                       "convolution as a GEMM too")


def tasks():
    return standard() + transposed() + [pointwise(), separable()]
