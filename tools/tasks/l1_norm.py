"""Level 1 normalizations (KernelBench 33-40)."""
from taskgen import make_task, buf, normal, launch, i32, i64, u64, scratch, problem

# Statistics over contiguous segments: x viewed as [S, L]. Stage 1: grid (P, S)
# blocks, block (p, s) sums one chunk of segment s in double; stage 2 combines
# the P partials of each segment in order; stage 3 normalizes.
SEG_SRC = r'''
// Reference for KernelBench level 1 problem {problem}.
// {what}
// The tensor is viewed as S contiguous segments of L elements each{segnote}.
// Stage 1 (seg_partial): block (p, s) sums one chunk of segment s and the
// squares, in double, into part[(s * P + p) * 2 + {{0, 1}}]: fixed order, no atomics.
// Stage 2 (seg_stats): {stats_what}
// Stage 3 (seg_apply): y = (x - mean) * rstd, a block row per segment.
// Stages 1 and 3 read float4s where the chunk or segment is 16-byte aligned.
#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS) seg_partial(const float* __restrict__ x,
        double* __restrict__ part, long long L, int P)
{{
        __shared__ double s1[THREADS], s2[THREADS];
        long long s = blockIdx.y, p = blockIdx.x;
        long long chunk = (L + P - 1) / P;
        long long lo = p * chunk, hi = lo + chunk < L ? lo + chunk : L;
        const float* seg = x + (unsigned long long)s * L;
        double a = 0.0, b = 0.0;
        long long from = lo;
        if (lo < hi && ((unsigned long long)(seg + lo) & 15) == 0) {{
                /* float4 body of the chunk, then its scalar tail */
                const float4* v4 = (const float4*)(seg + lo);
                long long n4 = (hi - lo) / 4;
                for (long long i = threadIdx.x; i < n4; i += THREADS) {{
                        float4 v = v4[i];
                        double e0 = v.x, e1 = v.y, e2 = v.z, e3 = v.w;
                        a += (e0 + e1) + (e2 + e3);
                        b += (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3);
                }}
                from = lo + n4 * 4;
        }}
        for (long long i = from + threadIdx.x; i < hi; i += THREADS) {{
                double v = seg[i];
                a += v;
                b += v * v;
        }}
        s1[threadIdx.x] = a;
        s2[threadIdx.x] = b;
        __syncthreads();
        for (int k = THREADS / 2; k > 0; k >>= 1) {{
                if (threadIdx.x < k) {{
                        s1[threadIdx.x] += s1[threadIdx.x + k];
                        s2[threadIdx.x] += s2[threadIdx.x + k];
                }}
                __syncthreads();
        }}
        if (threadIdx.x == 0) {{
                part[(s * P + p) * 2] = s1[0];
                part[(s * P + p) * 2 + 1] = s2[0];
        }}
}}

{stats_kernel}

extern "C" __global__ void __launch_bounds__(THREADS) seg_apply(const float* __restrict__ x,
        const double* __restrict__ stats, float* __restrict__ y, long long L{apply_extra})
{{
        /* grid (chunks, S): blockIdx.y is the segment, so its statistics are
         * read once per block and no element index is divided */
        unsigned long long s = blockIdx.y;
        unsigned long long g = {group_of_s};
        double mean = stats[2 * g], rstd = stats[2 * g + 1];
        const float* xs = x + s * (unsigned long long)L;
        float* ys = y + s * (unsigned long long)L;
        long long t = (long long)blockIdx.x * THREADS + threadIdx.x;
        long long stride = (long long)gridDim.x * THREADS;
        long long from = 0;
        if ((((unsigned long long)xs | (unsigned long long)ys) & 15) == 0) {{
                const float4* x4 = (const float4*)xs;
                float4* y4 = (float4*)ys;
                for (long long i = t; i < L / 4; i += stride) {{
                        float4 v = x4[i];
                        y4[i] = make_float4((float)(((double)v.x - mean) * rstd),
                                            (float)(((double)v.y - mean) * rstd),
                                            (float)(((double)v.z - mean) * rstd),
                                            (float)(((double)v.w - mean) * rstd));
                }}
                from = L / 4 * 4;
        }}
        for (long long i = from + t; i < L; i += stride)
                ys[i] = (float)(((double)xs[i] - mean) * rstd);
}}
'''

# Per segment statistics (instance, group and layer norm): group g = segment g.
SEG_STATS = r'''extern "C" __global__ void seg_stats(const double* __restrict__ part, double* __restrict__ stats,
        int S, int P, long long L, float eps)
{
        int s = blockIdx.x * blockDim.x + threadIdx.x;
        if (s >= S)
                return;
        double a = 0.0, b = 0.0;
        for (int p = 0; p < P; p++) {
                a += part[((long long)s * P + p) * 2];
                b += part[((long long)s * P + p) * 2 + 1];
        }
        double mean = a / (double)L;
        double var = b / (double)L - mean * mean;   /* biased variance */
        if (var < 0.0)
                var = 0.0;
        stats[2 * s] = mean;
        stats[2 * s + 1] = 1.0 / sqrt(var + (double)eps);
}'''

# Batch norm: segment (n, c); channel c combines the N segments (n, c).
BN_STATS = r'''extern "C" __global__ void seg_stats(const double* __restrict__ part, double* __restrict__ stats,
        int N, int C, int P, long long L, float eps)
{
        int c = blockIdx.x * blockDim.x + threadIdx.x;
        if (c >= C)
                return;
        double a = 0.0, b = 0.0;
        for (int n = 0; n < N; n++)
                for (int p = 0; p < P; p++) {
                        long long s = (long long)n * C + c;
                        a += part[(s * P + p) * 2];
                        b += part[(s * P + p) * 2 + 1];
                }
        double cnt = (double)N * (double)L;
        double mean = a / cnt;
        double var = b / cnt - mean * mean;   /* biased variance, as in training mode */
        if (var < 0.0)
                var = 0.0;
        stats[2 * c] = mean;
        stats[2 * c + 1] = 1.0 / sqrt(var + (double)eps);
}'''

P_EXPR = "ceil_div(%s, 32768)"


def seg_task(num, title, what, desc, params, shapes, S, L, seg_note, stats_what, torch_desc,
             bn=False, trials=2):
    P = P_EXPR % L
    src = SEG_SRC.format(problem=problem(num)["problem"], what=what, segnote=seg_note,
                         stats_what=stats_what, stats_kernel=BN_STATS if bn else SEG_STATS,
                         apply_extra=", int C" if bn else "",
                         group_of_s="s % (unsigned long long)C" if bn else "s")
    ngroups = "C" if bn else S
    stats_launch = (launch("seg_stats", ["ceil_div(C, 64)"], [64],
                           ["part", "stats", i32("N"), i32("C"), i32(P), i64(L), {"type": "f32", "value": 1e-5}])
                    if bn else
                    launch("seg_stats", ["ceil_div(%s, 64)" % S], [64],
                           ["part", "stats", i32(S), i32(P), i64(L), {"type": "f32", "value": 1e-5}]))
    plan = [launch("seg_partial", [P, S], [256], ["x", "part", i64(L), i32(P)]),
            stats_launch,
            launch("seg_apply", ["min(ceil_div(%s, 1024), 65535)" % L, S], [256],
                   ["x", "stats", "y", i64(L)] + ([i32("C")] if bn else []))]
    return make_task(
        num, "norm", title, desc, params, shapes,
        [buf("x", ["N", "C", "H", "W"], "in", init=normal(1.0, 2.0)),
         buf("y", ["N", "C", "H", "W"], "out")],
        src, plan,
        scratch_bufs=[scratch("part", "f64", "2 * %s * %s" % (S, P)),
                      scratch("stats", "f64", "2 * %s" % ngroups)],
        tolerance={"atol": 1e-4, "rtol": 1e-4},
        flops="8 * N * C * H * W", bytes_="12 * N * C * H * W", trials=trials,
        reference_note="three kernels: chunked partial sums in double, per-%s statistics, "
                       "normalize (float4 loads); PyTorch eager calls %s" % ("channel" if bn else "group", torch_desc))


NCHW = {"N": "batch", "C": "channels (features)", "H": "height (dim1)", "W": "width (dim2)"}


def tasks():
    out = []
    common = ("Inputs are normal(mean 1, std 2), so the mean matters. eps = 1e-5. The affine "
              "weight and bias of the PyTorch module are at their initial values (1 and 0) in "
              "KernelBench, so this task has none. x and y are row-major NCHW fp32 tensors of "
              "shape [N, C, H, W].")
    out.append(seg_task(
        33, "BatchNorm2d (training mode: batch statistics)",
        "BatchNorm2d in training mode: per-channel mean and biased variance over (N, H, W).",
        "Batch normalization as nn.BatchNorm2d computes it in training mode (the default mode of "
        "a fresh module): for each channel c, mean_c = mean of x[:, c, :, :] and var_c = biased "
        "variance (divide by N*H*W) of the same elements; y[n, c, h, w] = (x[n, c, h, w] - mean_c) "
        "/ sqrt(var_c + eps). Running statistics are not part of the output. " + common,
        NCHW,
        [{"name": "default", "N": 64, "C": 64, "H": 512, "W": 512},
         {"name": "small", "N": 5, "C": 7, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 3, "H": 5, "W": 7}],
        "N * C", "H * W", " (one per (n, c))",
        "channel c combines the partials of the N segments (n, c) in order of n, then "
        "mean and 1/sqrt(biased var + eps) in double.",
        "cudnn batch norm (training)", bn=True))
    out.append(seg_task(
        34, "InstanceNorm2d",
        "InstanceNorm2d: per (n, c) mean and biased variance over (H, W).",
        "Instance normalization (nn.InstanceNorm2d, affine=False, no running stats): for each "
        "(n, c), mean and biased variance over the H*W elements of x[n, c, :, :]; "
        "y = (x - mean) / sqrt(var + eps). " + common,
        NCHW,
        [{"name": "default", "N": 112, "C": 64, "H": 512, "W": 512},
         {"name": "small", "N": 5, "C": 7, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 3, "H": 5, "W": 7}],
        "N * C", "H * W", " (one per (n, c))", "mean and 1/sqrt(var + eps) per segment, in double.",
        "its instance norm (batch norm over a reshaped tensor)"))
    out.append(seg_task(
        35, "GroupNorm",
        "GroupNorm with G groups: per (n, g) mean and biased variance over the C/G channels of g "
        "and all of (H, W).",
        "Group normalization (nn.GroupNorm(G, C)): channels are split into G groups of C/G "
        "consecutive channels; for each (n, g), mean and biased variance over the (C/G)*H*W "
        "elements x[n, g*C/G:(g+1)*C/G, :, :]; y = (x - mean) / sqrt(var + eps). G divides C. "
        + common,
        dict(NCHW, G="groups (num_groups), divides C"),
        [{"name": "default", "N": 112, "C": 64, "G": 8, "H": 512, "W": 512},
         {"name": "small", "N": 5, "C": 12, "G": 3, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 4, "G": 2, "H": 5, "W": 7}],
        "N * G", "(C / G) * H * W", " (one per (n, g))",
        "mean and 1/sqrt(var + eps) per segment, in double.", "its group norm kernel"))
    out.append(seg_task(
        40, "LayerNorm over (C, H, W)",
        "LayerNorm with normalized_shape (C, H, W): per-n mean and biased variance.",
        "Layer normalization (nn.LayerNorm((C, H, W))): for each n, mean and biased variance "
        "over all C*H*W elements of x[n]; y = (x - mean) / sqrt(var + eps). " + common,
        {"N": "batch", "C": "features", "H": "dim1", "W": "dim2"},
        [{"name": "default", "N": 16, "C": 64, "H": 256, "W": 256},
         {"name": "small", "N": 5, "C": 7, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 3, "H": 5, "W": 7}],
        "N", "C * H * W", " (one per n)", "mean and 1/sqrt(var + eps) per segment, in double.",
        "its layer norm kernel", trials=3))
    out += [rms(), fro(), rownorm(38), rownorm(39)]
    return out


RMS_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: RMS normalization over
// dimension 1 (channels) of an NCHW tensor. One thread per (n, h, w) (a warp
// reads 128 contiguous bytes per channel): sum of squares over c in double,
// then y = x / sqrt(mean + eps). Up to CMAX channels each thread keeps its
// column of x in shared memory (its own, so no barrier), loads 16 at a time
// in flight, and x is read from memory once; more channels read it twice.
#define THREADS 128
#define CMAX 64

extern "C" __global__ void __launch_bounds__(THREADS) rms_norm_ref(const float* __restrict__ x,
        float* __restrict__ y, int N, int C, long long HW, float eps)
{{
        __shared__ float col[CMAX][THREADS];
        long long hw = (long long)blockIdx.x * THREADS + threadIdx.x;
        long long n = blockIdx.y;
        if (hw >= HW)
                return;
        const float* p = x + (unsigned long long)n * C * HW + hw;
        float* q = y + (unsigned long long)n * C * HW + hw;
        double ss = 0.0;
        if (C <= CMAX) {{
#pragma unroll 16
                for (int c = 0; c < C; c++)
                        col[c][threadIdx.x] = p[(unsigned long long)c * HW];
                for (int c = 0; c < C; c++) {{
                        double v = col[c][threadIdx.x];
                        ss += v * v;
                }}
                double r = 1.0 / sqrt(ss / C + (double)eps);
                for (int c = 0; c < C; c++)
                        q[(unsigned long long)c * HW] = (float)((double)col[c][threadIdx.x] * r);
                return;
        }}
        for (int c = 0; c < C; c++) {{
                double v = p[(unsigned long long)c * HW];
                ss += v * v;
        }}
        double r = 1.0 / sqrt(ss / C + (double)eps);
        for (int c = 0; c < C; c++)
                q[(unsigned long long)c * HW] = (float)((double)p[(unsigned long long)c * HW] * r);
}}
'''


def rms():
    num = 36
    return make_task(
        num, "norm", "RMSNorm over the channel dimension",
        "RMS normalization over dimension 1 of a row-major NCHW fp32 tensor x[N, C, H, W]: "
        "for each (n, h, w), rms = sqrt(mean_c x[n, c, h, w]^2 + eps) with eps = 1e-5, and "
        "y[n, c, h, w] = x[n, c, h, w] / rms. y has the shape of x. Inputs are normal(0, 1).",
        {"N": "batch", "C": "features (normalized over)", "H": "dim1", "W": "dim2"},
        [{"name": "default", "N": 112, "C": 64, "H": 512, "W": 512},
         {"name": "small", "N": 5, "C": 7, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 3, "H": 5, "W": 7}],
        [buf("x", ["N", "C", "H", "W"], "in", init=normal(0, 1)),
         buf("y", ["N", "C", "H", "W"], "out")],
        RMS_SRC.format(problem=problem(num)["problem"]),
        [launch("rms_norm_ref", ["ceil_div(H * W, 128)", "N"], [128],
                ["x", "y", i32("N"), i32("C"), i64("H * W"), {"type": "f32", "value": 1e-5}])],
        flops="4 * N * C * H * W", bytes_="8 * N * C * H * W", trials=2,
        reference_note="one thread per (n, h, w), x read once (kept in shared memory up to 64 "
                       "channels), sum "
                       "of squares in double; PyTorch eager runs "
                       "pow, mean, add, sqrt and div as separate kernels")


FRO_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: y = x / ||x||_F, the
// Frobenius norm of the whole tensor. fro_partial: 1024 blocks each sum the
// squares of a grid-stride slice in double into part[block]; fro_apply: every
// block re-sums the 1024 partials in the same fixed order (cheap, deterministic)
// and scales its slice. Both read float4s where x (and y) are 16-byte aligned.
#define THREADS 256
#define PARTS 1024

extern "C" __global__ void __launch_bounds__(THREADS) fro_partial(const float* __restrict__ x,
        double* __restrict__ part, unsigned long long n)
{{
        __shared__ double sh[THREADS];
        double a = 0.0;
        unsigned long long t = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
        unsigned long long from = 0;
        if (((unsigned long long)x & 15) == 0) {{
                const float4* x4 = (const float4*)x;
                for (unsigned long long i = t; i < n / 4; i += (unsigned long long)PARTS * THREADS) {{
                        float4 v = x4[i];
                        double e0 = v.x, e1 = v.y, e2 = v.z, e3 = v.w;
                        a += (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3);
                }}
                from = n / 4 * 4;
        }}
        for (unsigned long long i = from + t; i < n; i += (unsigned long long)PARTS * THREADS) {{
                double v = x[i];
                a += v * v;
        }}
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = THREADS / 2; k > 0; k >>= 1) {{
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }}
        if (threadIdx.x == 0)
                part[blockIdx.x] = sh[0];
}}

extern "C" __global__ void __launch_bounds__(THREADS) fro_apply(const float* __restrict__ x,
        const double* __restrict__ part, float* __restrict__ y, unsigned long long n)
{{
        __shared__ double inv;
        if (threadIdx.x == 0) {{
                double t = 0.0;
                for (int p = 0; p < PARTS; p++)
                        t += part[p];
                inv = 1.0 / sqrt(t);
        }}
        __syncthreads();
        double r = inv;
        unsigned long long stride = (unsigned long long)gridDim.x * THREADS;
        unsigned long long t = (unsigned long long)blockIdx.x * THREADS + threadIdx.x;
        unsigned long long from = 0;
        if ((((unsigned long long)x | (unsigned long long)y) & 15) == 0) {{
                const float4* x4 = (const float4*)x;
                float4* y4 = (float4*)y;
                for (unsigned long long i = t; i < n / 4; i += stride) {{
                        float4 v = x4[i];
                        y4[i] = make_float4((float)((double)v.x * r), (float)((double)v.y * r),
                                            (float)((double)v.z * r), (float)((double)v.w * r));
                }}
                from = n / 4 * 4;
        }}
        for (unsigned long long i = from + t; i < n; i += stride)
                y[i] = (float)((double)x[i] * r);
}}
'''


def fro():
    num = 37
    n = "N * C * H * W"
    return make_task(
        num, "norm", "Frobenius-norm normalization",
        "y = x / ||x||_F where ||x||_F = sqrt(sum of x^2 over ALL elements) (torch.norm(x, "
        "p='fro')), for a row-major fp32 tensor x[N, C, H, W]; y has the same shape. One global "
        "reduction, then a scale. The default has 1.88e9 elements: index with 64-bit integers "
        "and accumulate carefully (outputs are ~1/sqrt(N*C*H*W) ~ 2e-5, so the tolerance is "
        "mostly relative). Inputs are normal(0, 1).",
        {"N": "batch", "C": "features", "H": "dim1", "W": "dim2"},
        [{"name": "default", "N": 112, "C": 64, "H": 512, "W": 512},
         {"name": "small", "N": 5, "C": 7, "H": 100, "W": 33},
         {"name": "tiny", "N": 2, "C": 3, "H": 5, "W": 7}],
        [buf("x", ["N", "C", "H", "W"], "in", init=normal(0, 1)),
         buf("y", ["N", "C", "H", "W"], "out")],
        FRO_SRC.format(problem=problem(num)["problem"]),
        [launch("fro_partial", [1024], [256], ["x", "part", u64(n)]),
         launch("fro_apply", ["min(ceil_div(%s, 1024), 8192)" % n], [256], ["x", "part", "y", u64(n)])],
        scratch_bufs=[scratch("part", "f64", 1024)],
        tolerance={"atol": 1e-10, "rtol": 1e-4},
        tolerance_note="Outputs are ~1/sqrt(N*C*H*W) (2e-5 at the default size): atol 1e-10 so "
                       "that zeros fail; rtol 1e-4 admits a float-accumulated norm.",
        flops="3 * N * C * H * W", bytes_="12 * N * C * H * W", trials=1,
        reference_note="1024-way partial sums of squares in double, then scale (float4 loads, "
                       "at most 8192 scaling blocks, each re-summing the partials); PyTorch eager "
                       "runs a norm reduction and a division")


ROW_SRC = r'''
// Reference for KernelBench level 1 problem {problem}: {what}
// One block of 1024 threads per row; the row sum in double (per-thread strided
// sums, then a shared-memory tree: fixed order).
#define THREADS 1024

extern "C" __global__ void __launch_bounds__(THREADS) {kernel}(const float* __restrict__ x,
        float* __restrict__ y, long long D)
{{
        __shared__ double sh[THREADS];
        const float* row = x + (unsigned long long)blockIdx.x * D;
        float* out = y + (unsigned long long)blockIdx.x * D;
        double a = 0.0;
        for (long long i = threadIdx.x; i < D; i += THREADS) {{
                double v = row[i];
                a += {term};
        }}
        sh[threadIdx.x] = a;
        __syncthreads();
        for (int k = THREADS / 2; k > 0; k >>= 1) {{
                if (threadIdx.x < k)
                        sh[threadIdx.x] += sh[threadIdx.x + k];
                __syncthreads();
        }}
        double r = {inv};
        for (long long i = threadIdx.x; i < D; i += THREADS)
                out[i] = (float)((double)row[i] * r);
}}
'''


def rownorm(num):
    if num == 38:
        kernel, title = "l1_norm_ref", "L1 normalization (by the mean absolute value)"
        what = "y = x / mean(|x|, dim=1, keepdim=True) for x[B, D]."
        term, inv = "fabs(v)", "(double)D / sh[0]"
        math = ("y[b, i] = x[b, i] / ((1/D) * sum_j |x[b, j]|) (KernelBench: x / torch.mean("
                "torch.abs(x), dim=1, keepdim=True); note: the MEAN, not the sum, of |x|)")
        tol, tnote = {"atol": 1e-4, "rtol": 1e-4}, None
    else:
        kernel, title = "l2_norm_ref", "L2 normalization of rows"
        what = "y = x / ||x||_2 per row for x[B, D]."
        term, inv = "v * v", "1.0 / sqrt(sh[0])"
        math = "y[b, i] = x[b, i] / sqrt(sum_j x[b, j]^2) (x / torch.norm(x, p=2, dim=1, keepdim=True))"
        tol = {"atol": 1e-8, "rtol": 1e-4}
        tnote = ("Outputs are ~1/sqrt(D) (0.004 at the default size): atol 1e-8 so that zeros "
                 "or a constant fail.")
    return make_task(
        num, "norm", title,
        "Row normalization of a row-major fp32 matrix x of shape [B, D]: " + math +
        ". y has shape [B, D]. The default is 32768 x 65535 (2.1e9 elements, > 2^31: use 64-bit "
        "offsets). Inputs are normal(0, 1).",
        {"B": "rows (batch_size)", "D": "row length (dim)"},
        [{"name": "default", "B": 32768, "D": 65535},
         {"name": "small", "B": 129, "D": 4093},
         {"name": "tiny", "B": 3, "D": 33}],
        [buf("x", ["B", "D"], "in", init=normal(0, 1)), buf("y", ["B", "D"], "out")],
        ROW_SRC.format(problem=problem(num)["problem"], what=what, kernel=kernel, term=term, inv=inv),
        [launch(kernel, ["B"], [1024], ["x", "y", i64("D")])],
        tolerance=tol, tolerance_note=tnote,
        flops="3 * B * D", bytes_="12 * B * D", trials=1,
        reference_note="one block per row, row sum in double, two passes over the row; PyTorch "
                       "eager runs a reduction and a broadcast division")
