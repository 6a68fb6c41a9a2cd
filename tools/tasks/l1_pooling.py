"""Level 1 pooling (KernelBench 41-46)."""
import textwrap

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


# 41, 42, 44: row-tiled. The 1D tasks run the 2D kernel's scheme over one plane
# [N*C, L] with a vertical window of one tap, so a block's tile covers several rows.
SRC_TILED = r"""
// Reference for KernelBench level 1 problem {problem}: {what}
{header}
#define TPB 256
#define OUTS {outs}        /* outputs of a block's tile */
#define TWMAX {twmax}       /* the tile's widest extent along the last axis */
#define CAP 5120        /* floats of staged input (20 KiB), a multiple of 4 * TPB */
#define KMAX 8          /* widest window with an unrolled path */

static __device__ int pool_min(int a, int b)
{{
        return a < b ? a : b;
}}

// The staged row of input row ih begins (la + (ih mod 4) * (W mod 4)) mod 4
// floats into its pitch, where la is the lead of input row 0 (see the kernel).
static __device__ int pool_lead(int la, int lw, int ih)
{{
        return (la + (ih & 3) * lw) & 3;
}}
{fast_fn}
extern "C" __global__ void __launch_bounds__(TPB) {kernel}(const float* __restrict__ x,
        float* __restrict__ y, int NC, {dims_in}, {dims_out}, int K, int S, int PAD, int DIL)
{{
        __shared__ float4 tile4[CAP / 4];
        float* tile = (float*)tile4;
        const float PADV = {padv};
{axes}
        int TW = pool_min(TWMAX, (OW + 31) / 32 * 32);
        int TH = pool_min(OUTS / TW, OH);
        unsigned int tilesH = (OH + TH - 1) / TH;
        unsigned int plane = blockIdx.x / tilesH;
        int oh0 = (int)(blockIdx.x - plane * tilesH) * TH;
        int ow0 = blockIdx.y * TW;
        int nh = pool_min(TH, OH - oh0), nw = pool_min(TW, OW - ow0);
        const float* xp = x + (unsigned long long)plane * H * W;
        float* yp = y + (unsigned long long)plane * OH * OW;
        int iw0 = ow0 * SW - PW;
        int cols = (nw - 1) * SW + (KW - 1) * DW + 1;
        // input row ih's span starts (xp + ih * W + iw0) mod 16 bytes = pool_lead(la, lw, ih)
        int la = (int)(((unsigned long long)xp >> 2) & 3) + (iw0 & 3), lw = W & 3;
        int pitch = (cols + 6) & ~3;    // the lead (< 4) and whole chunks
        int p4 = pitch >> 2;
        int maxrows = CAP / pitch;
        int slice = maxrows >= (KH - 1) * DH + 1 ? (maxrows - (KH - 1) * DH - 1) / SH + 1 : 0;
        if (slice == 0) {{
                for (int i = threadIdx.x; i < nh * nw; i += TPB) {{
                        int oh = oh0 + i / nw, ow = ow0 + i % nw;
                        {acc_init}
                        for (int kh = 0; kh < KH; kh++) {{
                                int ih = oh * SH - PH + kh * DH;
                                if (ih < 0 || ih >= H)
                                        continue;
                                for (int kw = 0; kw < KW; kw++) {{
                                        int iw = ow * SW - PW + kw * DW;
                                        if (iw < 0 || iw >= W)
                                                continue;
                                        {acc_direct}
                                }}
                        }}
                        yp[(long long)oh * OW + ow] = {result};
                }}
                return;
        }}
        bool fast = {fast_test};
        int sdr = TPB / p4, sdm = TPB % p4;     // a thread's step through the staged chunks
        int odr = TPB / nw, odc = TPB % nw;     // and through the outputs (generic loop)
        for (int r0 = 0; r0 < nh; r0 += slice) {{
                int ch = pool_min(slice, nh - r0);
                int ih0 = (oh0 + r0) * SH - PH;
                int rows = (ch - 1) * SH + (KH - 1) * DH + 1;
                if (r0 > 0)
                        __syncthreads();
                // all of a thread's loads are issued before the first store to shared
                float4 v[CAP / 4 / TPB];
                int r = threadIdx.x / p4, m = threadIdx.x % p4;
#pragma unroll
                for (int u = 0; u < CAP / 4 / TPB; u++) {{
                        int ih = ih0 + r;
                        int iw = iw0 - pool_lead(la, lw, ih) + 4 * m;
                        v[u] = make_float4(PADV, PADV, PADV, PADV);
                        if ((int)threadIdx.x + u * TPB < rows * p4 && ih >= 0 && ih < H) {{
                                const float* src = xp + (long long)ih * W;
                                if (iw >= 0 && iw + 3 < W) {{
                                        v[u] = *(const float4*)(src + iw);
                                }} else {{
                                        if (iw >= 0 && iw < W)
                                                v[u].x = src[iw];
                                        if (iw + 1 >= 0 && iw + 1 < W)
                                                v[u].y = src[iw + 1];
                                        if (iw + 2 >= 0 && iw + 2 < W)
                                                v[u].z = src[iw + 2];
                                        if (iw + 3 >= 0 && iw + 3 < W)
                                                v[u].w = src[iw + 3];
                                }}
                        }}
                        m += sdm;
                        r += sdr;
                        if (m >= p4) {{
                                m -= p4;
                                r++;
                        }}
                }}
#pragma unroll
                for (int u = 0; u < CAP / 4 / TPB; u++)
                        if ((int)threadIdx.x + u * TPB < rows * p4)
                                tile4[threadIdx.x + u * TPB] = v[u];
                __syncthreads();
                if (fast) {{
                        float* yr = yp + (long long)(oh0 + r0) * OW + ow0 + threadIdx.x;
                        switch (K) {{
{cases}
                        }}
                        continue;
                }}
                r = threadIdx.x / nw;
                int c = threadIdx.x % nw;
                for (int i = threadIdx.x; i < ch * nw; i += TPB) {{
                        {acc_init}
                        for (int kh = 0; kh < KH; kh++) {{
                                int rr = r * SH + kh * DH;
                                const float* t = tile + rr * pitch + pool_lead(la, lw, ih0 + rr) + c * SW;
                                for (int kw = 0; kw < KW; kw++)
                                        {acc_tile}
                        }}
                        yp[(long long)(oh0 + r0 + r) * OW + ow0 + c] = {result};
                        c += odc;
                        r += odr;
                        if (c >= nw) {{
                                c -= nw;
                                r++;
                        }}
                }}
        }}
}}
"""

# 1D, S == 1: taps and stores at fixed offsets from one address per tap.
FAST_1D = r"""
// S == 1, K == KT: thread t computes columns t + TPB * j (j < TWMAX / TPB) of
// each output row of the slice (staged row r is output row r). A tap is one
// address and TWMAX / TPB shared loads at fixed offsets from it.
template <int KT>
static __device__ void pool_rows_s1(const float* tile, int pitch, int la, int lw, int ih0,
        int ch, int nw, int DW, float* yr, int OW)
{{
        const int V = TWMAX / TPB;
        int c = threadIdx.x;
        for (int r = 0; r < ch; r++) {{
                const float* t = tile + r * pitch + pool_lead(la, lw, ih0 + r) + c;
                float acc[V];
#pragma unroll
                for (int j = 0; j < V; j++)
                        acc[j] = {init};
#pragma unroll
                for (int kw = 0; kw < KT; kw++) {{
#pragma unroll
                        for (int j = 0; j < V; j++)
                                if (c + j * TPB < nw)
                                        {acc_j}
                }}
#pragma unroll
                for (int j = 0; j < V; j++)
                        if (c + j * TPB < nw)
                                yr[j * TPB] = {result_j};
                yr += OW;
        }}
}}
"""

# 2D max, S == 1, DIL == 1: the window is separable; a ring of row maxima.
FAST_2D = r"""
// S == 1, DIL == 1, K == KT: thread t owns column t of the tile (TWMAX <= TPB)
// and walks down the slice: each staged row's max over the KT taps of the
// column's window enters a ring of KT registers, whose max is the output of
// the row KT - 1 rows up (max pooling is separable).
template <int KT>
static __device__ float pool_hmax(const float* tile, int pitch, int la, int lw, int ih0, int rr)
{{
        const float* t = tile + rr * pitch + pool_lead(la, lw, ih0 + rr) + threadIdx.x;
        float m = t[0];
#pragma unroll
        for (int kw = 1; kw < KT; kw++)
                m = fmaxf(m, t[kw]);
        return m;
}}

template <int KT>
static __device__ void pool_rows_s1(const float* tile, int pitch, int la, int lw, int ih0,
        int ch, int nw, int DW, float* yr, int OW)
{{
        if ((int)threadIdx.x >= nw)
                return;
        float h[KT];
#pragma unroll
        for (int i = 1; i < KT; i++)
                h[i] = pool_hmax<KT>(tile, pitch, la, lw, ih0, i - 1);
        for (int r = 0; r < ch; r++) {{
#pragma unroll
                for (int i = 0; i < KT - 1; i++)
                        h[i] = h[i + 1];
                h[KT - 1] = pool_hmax<KT>(tile, pitch, la, lw, ih0, r + KT - 1);
                float acc = h[0];
#pragma unroll
                for (int i = 1; i < KT; i++)
                        acc = fmaxf(acc, h[i]);
                *yr = acc;
                yr += OW;
        }}
}}
"""

TILE_OUTS = 4096
TILE_TWMAX = {1: 1024, 2: 256}
TILE_KMAX = 8
# FAST_1D: TWMAX a multiple of TPB (256); FAST_2D: a thread owns a column, TWMAX <= TPB.
assert TILE_TWMAX[1] % 256 == 0 and TILE_TWMAX[2] <= 256


def tiled_source(num, nd, maxpool, kernel, what):
    if nd == 1:
        axes = ("        // rows of [N*C, L]: the vertical window is one tap\n"
                "        const int H = NC, W = L, OH = NC, OW = OL;\n"
                "        const int KH = 1, SH = 1, PH = 0, DH = 1, KW = K, SW = S, PW = PAD, DW = DIL;")
        dims_in, dims_out, tile_rows = "int L", "int OL", "rows (n, c)"
        fast_test = "S == 1 && K >= 2 && K <= KMAX"
        fast_cond = ""
        fast_how = ("a thread computes TWMAX / TPB outputs of a row, TPB apart, and reads "
                    "each tap of them at fixed offsets from one address")
    else:
        assert maxpool
        axes = "        const int KH = K, SH = S, PH = PAD, DH = DIL, KW = K, SW = S, PW = PAD, DW = DIL;"
        dims_in, dims_out, tile_rows = "int H, int W", "int OH, int OW", "output rows of one (n, c)"
        fast_test = "S == 1 && DIL == 1 && K >= 2 && K <= KMAX"
        fast_cond = " and DIL == 1"
        fast_how = ("max pooling is separable: a thread walks down a column and keeps the "
                    "row maxima of the last K rows in registers")
    if maxpool:
        op = "acc = fmaxf(acc, %s);"
        init = "-__int_as_float(0x7f800000)"
        acc_init, result = "float acc = %s;" % init, "acc"
        padv, padval = init, "-infinity"
        padnote = "so padded taps never win, as if skipped"
        acc_j, result_j = "acc[j] = fmaxf(acc[j], t[kw * DW + j * TPB]);", "acc[j]"
    else:
        op = "acc += %s;"
        init = "0.0f"
        acc_init, result = "float acc = 0.0f;", "acc / (float)(K)"
        padv, padval = "0.0f", "zeros"
        padnote = "count_include_pad=True: the divisor is always K"
        acc_j, result_j = "acc[j] += t[kw * DW + j * TPB];", "acc[j] / (float)(KT)"
    fast_fn = (FAST_1D if nd == 1 else FAST_2D).format(init=init, acc_j=acc_j, result_j=result_j)
    cases = "\n".join("                        case %d:\n"
                      "                                pool_rows_s1<%d>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);\n"
                      "                                break;" % (k, k)
                      for k in range(2, TILE_KMAX + 1))
    header = (
        "Row-tiled. A block of 256 threads computes a tile of up to %d outputs: TH %s by TW "
        "positions along the last axis, TW = min(%d, OW rounded up to 32) and TH = min(%d / TW, "
        "OH); the plan's grid uses the same formulas.%s The block stages the input span of the "
        "tile's windows in shared memory, each staged row placed at the offset that makes it "
        "whole 16-byte chunks of x: a thread first issues all its loads (coalesced float4 loads, "
        "scalar ones for a chunk that straddles an edge of the input row; padding is stored as "
        "%s, %s), then stores them. The threads then compute the outputs from shared memory and "
        "store them coalesced (a warp writes consecutive outputs). With S == 1 and 2 <= K <= "
        "KMAX%s the window is unrolled (%s); any other stride, padding or dilation takes the "
        "generic loop, in which they only move the taps. A tile whose span exceeds the buffer is "
        "done in slices of output rows; one whose window alone exceeds it (never at the task's "
        "shapes) reads its taps from x directly. Offsets into x and y are 64-bit."
        % (TILE_OUTS, tile_rows, TILE_TWMAX[nd], TILE_OUTS,
           (" The 1D task is the 2D scheme over one plane [N*C, L] whose vertical window is one "
            "tap: H = OH = N*C, so a tile covers several rows.") if nd == 1 else "",
           padval, padnote, fast_cond, fast_how))
    header = "\n".join("// " + l.replace("\0", " ")
                        for l in textwrap.wrap(header.replace("(n, c)", "(n,\0c)"), 86))
    return SRC_TILED.format(header=header, problem=problem(num)["problem"], what=what, outs=TILE_OUTS,
                            twmax=TILE_TWMAX[nd], tile_rows=tile_rows, padval=padval,
                            padnote=padnote, kernel=kernel, dims_in=dims_in, dims_out=dims_out,
                            padv=padv, axes=axes, acc_init=acc_init, result=result,
                            acc_direct=op % "xp[(long long)ih * W + iw]",
                            acc_tile=op % "t[kw * DW]", fast_fn=fast_fn, fast_test=fast_test,
                            fast_cond=fast_cond, fast_how=fast_how, cases=cases)


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
    tiled = nd == 1 or (nd == 2 and maxpool)
    if tiled:
        src = tiled_source(num, nd, maxpool, kernel, what)
    elif nd <= 2:
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
    if tiled:
        # the kernel derives the same TW and TH from OW and OH (SRC_TILED)
        oh = "N * C" if nd == 1 else "(%s)" % out_dim(axes[0], maxpool)
        ow = out_dim(axes[-1], maxpool)
        tw = "min(%d, ceil_div(%s, 32) * 32)" % (TILE_TWMAX[nd], ow)
        th = "min(%d / %s, %s)" % (TILE_OUTS, tw, oh)
        gx = ("ceil_div(N * C, %s)" % th if nd == 1
              else "N * C * ceil_div(%s, %s)" % (oh, th))
        plan = [launch(kernel, [gx, "ceil_div(%s, %s)" % (ow, tw)], ["256"], args)]
        how = ("row-tiled: a block stages the input span of a tile of up to %d outputs (%s by up "
               "to %d along the last axis) in shared memory with coalesced float4 loads (all of a "
               "thread's loads issued before its first store), computes the windows from shared "
               "memory (unrolled for S == 1 and K <= %d%s) and stores coalesced"
               % (TILE_OUTS, "rows (n, c)" if nd == 1 else "output rows of one (n, c)",
                  TILE_TWMAX[nd], TILE_KMAX,
                  "" if nd == 1 else " with DIL == 1, as row maxima kept in registers"))
    elif nd <= 2:
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
