"""conv_gemm - convolution references as cuDNN runs fp32 convolutions: im2col + cuBLAS SGEMM.

One generic set of kernels (1-D, 2-D and 3-D alike: a 1-D or 2-D task passes size-1
leading axes) written once here and emitted into each task's .cu, and a plan builder
used by l1_conv.py and l2_conv.py:

* Standard convolution ("im2col"): per image n and group g, the GEMM
  y[n, g] (CO/G x P) = W[g] (CO/G x CI/G*KK) @ col[n, g] (CI/G*KK x P), where P is the
  number of output positions and KK the number of kernel taps.  `conv_im2col` gathers
  col (zero for padding taps); `conv_rep_weights` replicates W once per (image, group) so
  that one strided-batched GEMM (packed matrices, TF32 off) does the whole batch.
* Transposed convolution ("col2im", any stride): the GEMM
  col[n, g] (CO/G*KK x IP) = W[g]^T (CO/G*KK x CI/G) @ x[n, g] (CI/G x IP) (no im2col;
  IP input positions), then `conv_col2im` gathers: every output element sums, in a fixed
  order, the col entries of the taps that land on it (no atomics: deterministic).
* Transposed convolution, stride 1 on every axis ("gather", when choose() finds it
  cheaper at the default size, or the only form that fits): the standard form's GEMM
  over the transposed convolution's gather form, col[n, g][c*KK + k][o] =
  x[n, g*cig + c, o + PAD - k*DIL] (zero outside the input), with the weights re-laid
  per group as [CO/G][CI/G*KK] by `conv_flip_weights`. With a stride most of its column
  entries would be zeros (prod(stride) times col2im's work), hence stride 1 only.

Bias and a level-2 epilogue run in `conv_store` (after the GEMM, in place on y) or
inside `conv_col2im`.  Where the column buffer of the whole batch would not fit the
scratch limit (LIMIT_SCRATCH_BYTES_MAX, 4 GiB for all scratch of a shape set) the plan
runs S slices of ceil_div(N, S) images each, every slice its own im2col (or input copy),
GEMM and store, with S fixed per task from the default shape set (a plan's step count is
the same for every shape set; images past N in the last slice are computed on zeros and
never stored).  A gemm step has no element offsets, so only the first slice's GEMM can
write y (or read x) itself; a later slice's GEMM writes scratch that conv_store copies
into y (standard and gather forms) or reads a copy of its images of x (col2im).
"""
from check_tasks import ev
from taskgen import launch, gemm, i32, u64, scratch

SCRATCH_BUDGET = 4 << 30          # common/limits.h LIMIT_SCRATCH_BYTES_MAX
PLAN_STEPS_MAX = 64               # common/limits.h LIMIT_LAUNCHES_MAX
SPAN = 1024                       # output-row elements one warp handles per step (CONV_SPAN)
# Rough H100 rates used only to choose between the two transposed forms.
GEMM_FLOPS = 40e12
MEM_BYTES = 2.5e12

KERNELS = r'''
// Convolution as im2col + cuBLAS SGEMM (tools/tasks/conv_gemm.py). Every kernel takes
// three spatial axes (D, H, W); a 1-D or 2-D convolution passes size-1 leading axes
// with kernel 1, stride 1, padding 0, dilation 1. A warp handles a segment of at most
// CONV_SPAN elements of one row (the lanes stride along it), or rb whole rows shorter
// than that in sequence, so the index decoding is paid once per warp step and the
// following rows advance the indices by carries. 64-bit offsets throughout.
#define CONV_SPAN @@SPAN@@

// The epilogue of a task: v is the convolution's value (bias included) at output
// channel co; ep is the task's extra epilogue operand (unused by most).
static __device__ inline float conv_epilogue(float v, int co, const float* __restrict__ ep)
{
        (void)co;
        (void)ep;
@@EPILOGUE@@
}

// *r % d, and *r /= d (32-bit arithmetic while *r fits in 32 bits).
static __device__ inline int conv_split(unsigned long long* r, int d)
{
        int m;
        if (*r >> 32) {
                m = (int)(*r % (unsigned long long)d);
                *r /= (unsigned long long)d;
        } else {
                unsigned int v = (unsigned int)*r;
                m = (int)(v % (unsigned int)d);
                *r = v / (unsigned int)d;
        }
        return m;
}

// col[j][ci][kd][kh][kw][od][oh][ow] for images n0 + j (rows of OW elements, `rows` of
// them): the B operand of the GEMM of image n0 + j (rows ci*KK + k, columns the output
// positions). Standard (tr = 0): x[n, ci, o*S - PAD + k*DIL]; transposed gather form
// (tr = 1): x[n, ci, (o + PAD - k*DIL) / S] where that divides exactly; zero where the
// tap falls outside the input and for images n >= N.
extern "C" __global__ void conv_im2col(const float* __restrict__ x, float* __restrict__ col,
        int N, int n0, int C, int ID, int IH, int IW, int OD, int OH, int OW, int KD, int KH,
        int KW, int SD, int SH, int SW, int PD, int PH, int PW, int DD, int DH, int DW, int tr,
        unsigned long long rows, int spans, int rb)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        unsigned long long steps = (rows + rb - 1) / rb * spans;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < steps; q += nw) {
                unsigned long long r = q;
                int w0 = conv_split(&r, spans) * CONV_SPAN;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                unsigned long long row = r * rb;
                r = row;
                int oh = conv_split(&r, OH);
                int od = conv_split(&r, OD);
                int kw = conv_split(&r, KW);
                int kh = conv_split(&r, KH);
                int kd = conv_split(&r, KD);
                int ci = conv_split(&r, C);
                long long n = n0 + (long long)r;
                for (int k = 0; k < rb && row < rows; k++, row++) {
                        int id, ih;
                        bool ok = n < N;
                        if (!tr) {
                                id = od * SD - PD + kd * DD;
                                ih = oh * SH - PH + kh * DH;
                        } else {
                                int td = od + PD - kd * DD, th = oh + PH - kh * DH;
                                ok = ok && td >= 0 && th >= 0 && (SD == 1 || td % SD == 0) &&
                                     (SH == 1 || th % SH == 0);
                                id = SD == 1 ? td : td / SD;
                                ih = SH == 1 ? th : th / SH;
                        }
                        ok = ok && id >= 0 && id < ID && ih >= 0 && ih < IH;
                        const float* xr = x;
                        if (ok)
                                xr = x + (((unsigned long long)n * C + ci) * ID + id) * IH * (unsigned long long)IW +
                                     (unsigned long long)ih * IW;
                        float* cr = col + row * OW;
                        for (int ow = w0 + lane; ow < wend; ow += 32) {
                                float v = 0.0f;
                                if (ok) {
                                        int iw;
                                        bool okw;
                                        if (!tr) {
                                                iw = ow * SW - PW + kw * DW;
                                                okw = iw >= 0;
                                        } else {
                                                int tw = ow + PW - kw * DW;
                                                okw = tw >= 0 && (SW == 1 || tw % SW == 0);
                                                iw = SW == 1 ? tw : tw / SW;
                                        }
                                        if (okw && iw < IW)
                                                v = xr[iw];
                                }
                                cr[ow] = v;
                        }
                        if (++oh == OH) {
                                oh = 0;
                                if (++od == OD) {
                                        od = 0;
                                        if (++kw == KW) {
                                                kw = 0;
                                                if (++kh == KH) {
                                                        kh = 0;
                                                        if (++kd == KD) {
                                                                kd = 0;
                                                                if (++ci == C) {
                                                                        ci = 0;
                                                                        n++;
                                                                }
                                                        }
                                                }
                                        }
                                }
                        }
                }
        }
}

// wrep[i] = w[i % per]: the weights once per (image, group) of a slice, the packed A
// operands of one strided-batched GEMM.
extern "C" __global__ void conv_rep_weights(const float* __restrict__ w, float* __restrict__ wrep,
        unsigned long long per, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                wrep[i] = w[i % per];
}

// Transposed weights [CI][CO/G][KK] to the gather form's A operands, once per (image,
// group): wrep[j][g][co'][c][k] = w[g*cig + c][co'][k].
extern "C" __global__ void conv_flip_weights(const float* __restrict__ w, float* __restrict__ wrep,
        int G, int cig, int cog, int KK, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride) {
                unsigned long long r = i;
                int k = conv_split(&r, KK);
                int c = conv_split(&r, cig);
                int co = conv_split(&r, cog);
                int g = conv_split(&r, G);
                wrep[i] = w[(((unsigned long long)g * cig + c) * cog + co) * KK + k];
        }
}

// xs[j] = x[n0 + j] for the images of a slice (per floats each; zero past image N):
// the B operand of the col2im form's GEMM for a slice after the first.
extern "C" __global__ void conv_slice(const float* __restrict__ x, float* __restrict__ xs,
        unsigned long long per, int N, int n0, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        unsigned long long have = N > n0 ? (unsigned long long)(N - n0) * per : 0;
        const float* xp = x + (unsigned long long)n0 * per;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                xs[i] = i < have ? xp[i] : 0.0f;
}

// y[n0 + j, co, :] = conv_epilogue(src[j, co, :] + bias[co]) for the images of a slice
// below N (src may be y itself: each element is read and written by one thread).
extern "C" __global__ void conv_store(const float* src, const float* __restrict__ bias,
        const float* __restrict__ ep, float* y, int N, int n0, int nb, int CO,
        unsigned long long P, int has_bias)
{
        for (unsigned long long row = blockIdx.y; row < (unsigned long long)nb * CO; row += gridDim.y) {
                unsigned long long r = row;
                int co = conv_split(&r, CO);
                long long n = n0 + (long long)r;
                if (n >= N)
                        continue;
                float b = has_bias ? bias[co] : 0.0f;
                const float* s = src + row * P;
                float* d = y + ((unsigned long long)n * CO + co) * P;
                for (unsigned long long p = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; p < P;
                     p += (unsigned long long)gridDim.x * blockDim.x)
                        d[p] = conv_epilogue(s[p] + b, co, ep);
        }
}

// y[n0 + j, co, o] = conv_epilogue(bias[co] + sum over taps k of col[j][co][k][i]) where
// i = (o + PAD - k*DIL) / S divides exactly and lies in the input: the transposed
// convolution's col2im as a gather, taps in a fixed order (deterministic, no atomics).
// The (kd, kh) taps are warp-uniform for a row: each adds its sum over kw to the
// warp's own row segment of y (cache-resident), then the epilogue rewrites it.
extern "C" __global__ void conv_col2im(const float* __restrict__ col, const float* __restrict__ bias,
        const float* __restrict__ ep, float* __restrict__ y, int N, int n0, int CO, int ID, int IH,
        int IW, int OD, int OH, int OW, int KD, int KH, int KW, int SD, int SH, int SW, int PD,
        int PH, int PW, int DD, int DH, int DW, int has_bias, unsigned long long rows, int spans,
        int rb)
{
        unsigned long long nw = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
        unsigned long long steps = (rows + rb - 1) / rb * spans;
        unsigned long long ip = (unsigned long long)ID * IH * IW;
        int lane = threadIdx.x & 31;
        for (unsigned long long q = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
             q < steps; q += nw) {
                unsigned long long r = q;
                int w0 = conv_split(&r, spans) * CONV_SPAN;
                int wend = OW - w0 < CONV_SPAN ? OW : w0 + CONV_SPAN;
                unsigned long long row = r * rb;
                r = row;
                int oh = conv_split(&r, OH);
                int od = conv_split(&r, OD);
                int co = conv_split(&r, CO);
                unsigned long long j = r;
                for (int k = 0; k < rb && row < rows; k++, row++) {
                        long long n = n0 + (long long)j;
                        if (n < N) {
                                const float* cj = col + (j * CO + co) * (unsigned long long)KD * KH * KW * ip;
                                float* yr = y + (((unsigned long long)n * CO + co) * OD + od) * OH *
                                                (unsigned long long)OW + (unsigned long long)oh * OW;
                                float b = has_bias ? bias[co] : 0.0f;
                                for (int ow = w0 + lane; ow < wend; ow += 32)
                                        yr[ow] = b;
                                for (int kd = 0; kd < KD; kd++) {
                                        int td = od + PD - kd * DD;
                                        if (td < 0 || (SD > 1 && td % SD != 0) || td / SD >= ID)
                                                continue;
                                        for (int kh = 0; kh < KH; kh++) {
                                                int th = oh + PH - kh * DH;
                                                if (th < 0 || (SH > 1 && th % SH != 0) || th / SH >= IH)
                                                        continue;
                                                const float* ck = cj + ((unsigned long long)kd * KH + kh) * KW * ip +
                                                                  ((unsigned long long)(td / SD) * IH + th / SH) * IW;
                                                for (int ow = w0 + lane; ow < wend; ow += 32) {
                                                        float s = 0.0f;
                                                        for (int kw = 0; kw < KW; kw++) {
                                                                int tw = ow + PW - kw * DW;
                                                                if (tw < 0 || (SW > 1 && tw % SW != 0))
                                                                        continue;
                                                                int iw = SW == 1 ? tw : tw / SW;
                                                                if (iw < IW)
                                                                        s += ck[(unsigned long long)kw * ip + iw];
                                                        }
                                                        yr[ow] += s;
                                                }
                                        }
                                }
                                for (int ow = w0 + lane; ow < wend; ow += 32)
                                        yr[ow] = conv_epilogue(yr[ow], co, ep);
                        }
                        if (++oh == OH) {
                                oh = 0;
                                if (++od == OD) {
                                        od = 0;
                                        if (++co == CO) {
                                                co = 0;
                                                j++;
                                        }
                                }
                        }
                }
        }
}
'''


def source(epilogue="return v;"):
    """The kernels, with `epilogue` (C statements over v, co, ep; returns) as the epilogue."""
    body = "\n".join("        " + ln for ln in epilogue.strip("\n").split("\n"))
    return KERNELS.replace("@@EPILOGUE@@", body).replace("@@SPAN@@", str(SPAN))


def _prod(xs):
    return " * ".join("(%s)" % x for x in xs)


class Conv:
    """A convolution by expressions over a task's params (strings).

    nd: 1, 2 or 3; I, O, K, S, P, D: per-axis lists of nd expressions (input size, output
    size, kernel size, stride, padding, dilation); N, CI, CO, G: expressions.
    """

    def __init__(self, nd, transposed, N, CI, CO, G, I, O, K, S, P, D):
        pad = 3 - nd
        self.nd, self.tr = nd, transposed
        self.N, self.CI, self.CO, self.G = N, CI, CO, G
        self.I = ["1"] * pad + list(I)
        self.O = ["1"] * pad + list(O)
        self.K = ["1"] * pad + list(K)
        self.S = ["1"] * pad + list(S)
        self.P = ["0"] * pad + list(P)
        self.D = ["1"] * pad + list(D)
        self.KK = _prod(K)
        self.IP = _prod(I)
        self.OP = _prod(O)
        self.cig = "((%s) / (%s))" % (CI, G)
        self.cog = "((%s) / (%s))" % (CO, G)


def _scratch_need(c, form, nb, slices, params, ytmp=False):
    """Scratch bytes of one slice of nb images at params."""
    e = lambda x: ev(x, params)  # noqa: E731
    N = nb
    if form == "col2im":
        words = N * e(c.CI) * e(c.cog) * e(c.KK)            # wrep
        words += N * e(c.CO) * e(c.KK) * e(c.IP)            # col
        if slices > 1:
            words += N * e(c.CI) * e(c.IP)                  # xs
    else:
        words = N * e(c.CO) * e(c.cig) * e(c.KK)            # wrep
        words += N * e(c.CI) * e(c.KK) * e(c.OP)            # col
        if slices > 1 or ytmp:
            words += N * e(c.CO) * e(c.OP)                  # ytmp
    return 4 * words


def _cost(c, form, slices, params):
    """Rough seconds of one run: GEMM flops, column traffic (written, read back) and the
    store pass (the GEMM's output read and written again) where there is one."""
    e = lambda x: ev(x, params)  # noqa: E731
    n, co, cig, kk = e(c.N), e(c.CO), e(c.cig), e(c.KK)
    if form == "col2im":
        fl = 2 * n * co * cig * kk * e(c.IP)
        by = 8 * n * co * kk * e(c.IP)
    else:
        fl = 2 * n * co * cig * kk * e(c.OP)
        by = 8 * n * e(c.CI) * kk * e(c.OP) + (8 * n * co * e(c.OP) if slices > 1 else 0)
    return fl / GEMM_FLOPS + by / MEM_BYTES


def choose(c, default, ytmp=False):
    """((form, slices), None) for the default shape set `default` (a params dict), or
    (None, why). ytmp: the plan's GEMM always writes a scratch slice (a plan() consumer)."""
    forms = ["im2col"] if not c.tr else ["gather", "col2im"]
    best = None
    why = []
    n = ev(c.N, default)
    for form in forms:
        if form == "gather" and any(ev(s, default) != 1 for s in c.S):
            why.append("the gather form is for stride 1 only")
            continue
        per_step = 3
        fit = None
        for slices in list(range(1, n + 1)):
            if 1 + per_step * slices > PLAN_STEPS_MAX:
                break
            nb = -(-n // slices)
            if -(-n // nb) != slices:
                continue
            if _scratch_need(c, form, nb, slices, default, ytmp) <= SCRATCH_BUDGET:
                # prefer a slicing with no wasted image when one is within a factor 2
                fit = slices
                for s2 in range(slices, min(2 * slices, n) + 1):
                    if n % s2 == 0 and 1 + per_step * s2 <= PLAN_STEPS_MAX:
                        fit = s2
                        break
                break
        if fit is None:
            why.append("the %s form's column buffer for one image exceeds the 4 GiB scratch "
                       "limit or needs more than %d plan steps" % (form, PLAN_STEPS_MAX))
            continue
        cost = _cost(c, form, fit, default)
        if best is None or cost < best[2]:
            best = (form, fit, cost)
    if best is None:
        return None, "; ".join(why)
    return (best[0], best[1]), None


def plan(c, form, slices, x="x", w="w", y="y", bias=None, ep=None, epilogue=False,
         consumer=None):
    """(plan steps, scratch list) for Conv c in `form` with `slices` slices.

    bias: name of a [CO] bias buffer or None; ep: the epilogue operand's buffer name (or
    None); epilogue: True when the task's conv_epilogue() is not the identity.
    consumer (im2col form only): a function (n0, nb) of two expressions returning the
    launch steps that read a slice's GEMM output from scratch "ytmp" ([nb][CO][P], no
    bias added; images n0 + j >= N are garbage) in place of conv_store into y.
    """
    nb = c.N if slices == 1 else "ceil_div(%s, %d)" % (c.N, slices)
    steps = []
    scr = []
    hb = "1" if bias else "0"
    bias_arg = bias or w
    ep_arg = ep or w
    dims = [i32(v) for v in c.I + c.O + c.K + c.S + c.P + c.D]
    if form == "col2im":
        wper = "%s * %s * %s" % (c.CI, c.cog, c.KK)
        wtotal = "(%s) * %s" % (nb, wper)
        col_count = "(%s) * (%s) * %s * %s" % (nb, c.CO, c.KK, c.IP)
        xs_count = "(%s) * (%s) * %s" % (nb, c.CI, c.IP)
        scr.append(scratch("wrep", "f32", wtotal))
        scr.append(scratch("col", "f32", col_count))
        if slices > 1:
            scr.append(scratch("xs", "f32", xs_count))
        steps.append(launch("conv_rep_weights", ["min(ceil_div(%s, 256), 65536)" % wtotal], [256],
                            [w, "wrep", u64(wper), u64(wtotal)]))
        rows = "(%s) * (%s) * (%s) * (%s)" % (nb, c.CO, c.O[0], c.O[1])
        spans = "ceil_div(%s, %d)" % (c.O[2], SPAN)
        rb = "max(1, %d / (%s))" % (SPAN, c.O[2])
        for s in range(slices):
            n0 = "%d * (%s)" % (s, nb) if s else "0"
            b = x       # slice 0 starts at image 0: its GEMM reads x itself
            if s > 0:
                steps.append(launch("conv_slice", ["min(ceil_div(%s, 256), 65536)" % xs_count], [256],
                                    [x, "xs", u64("(%s) * %s" % (c.CI, c.IP)), i32(c.N), i32(n0),
                                     u64(xs_count)]))
                b = "xs"
            steps.append(gemm("wrep", b, "col", "%s * %s" % (c.cog, c.KK), c.IP, c.cig, trans_a=True,
                              batch="(%s) * (%s)" % (nb, c.G)))
            steps.append(launch("conv_col2im", ["min(ceil_div(ceil_div(%s, %s) * %s, 8), 262144)"
                                                % (rows, rb, spans)],
                                [256],
                                ["col", bias_arg, ep_arg, y, i32(c.N), i32(n0), i32(c.CO)] + dims +
                                [i32(hb), u64(rows), i32(spans), i32(rb)]))
        return steps, scr
    # im2col (standard) or gather (transposed, stride 1): y[n, g] = A[g] @ col[n, g]
    kc = "%s * %s" % (c.cig, c.KK)
    wper = "(%s) * %s" % (c.CO, kc)
    wtotal = "(%s) * %s" % (nb, wper)
    col_count = "(%s) * (%s) * %s * %s" % (nb, c.CI, c.KK, c.OP)
    scr.append(scratch("wrep", "f32", wtotal))
    scr.append(scratch("col", "f32", col_count))
    if slices > 1 or consumer:
        scr.append(scratch("ytmp", "f32", "(%s) * (%s) * %s" % (nb, c.CO, c.OP)))
    if form == "gather":
        steps.append(launch("conv_flip_weights", ["min(ceil_div(%s, 256), 65536)" % wtotal], [256],
                            [w, "wrep", i32(c.G), i32(c.cig), i32(c.cog), i32(c.KK), u64(wtotal)]))
    else:
        steps.append(launch("conv_rep_weights", ["min(ceil_div(%s, 256), 65536)" % wtotal], [256],
                            [w, "wrep", u64(wper), u64(wtotal)]))
    rows = "(%s) * (%s) * %s * (%s) * (%s)" % (nb, c.CI, c.KK, c.O[0], c.O[1])
    spans = "ceil_div(%s, %d)" % (c.O[2], SPAN)
    rb = "max(1, %d / (%s))" % (SPAN, c.O[2])
    post = bias is not None or epilogue        # conv_store needed even on y itself
    for s in range(slices):
        n0 = "%d * (%s)" % (s, nb) if s else "0"
        steps.append(launch("conv_im2col", ["min(ceil_div(ceil_div(%s, %s) * %s, 8), 262144)"
                                            % (rows, rb, spans)],
                            [256],
                            [x, "col", i32(c.N), i32(n0), i32(c.CI)] + dims +
                            [i32("1" if form == "gather" else "0"), u64(rows), i32(spans), i32(rb)]))
        # slice 0 starts at image 0 of y: its GEMM writes y itself (nb <= N images)
        dst = y if s == 0 and not consumer else "ytmp"
        steps.append(gemm("wrep", "col", dst, c.cog, c.OP, kc, batch="(%s) * (%s)" % (nb, c.G)))
        if consumer:
            steps.extend(consumer(n0, nb))
        elif s > 0 or post:
            steps.append(launch("conv_store", ["min(ceil_div(%s, 256), 4096)" % c.OP,
                                               "min((%s) * (%s), 65535)" % (nb, c.CO)], [256],
                                [dst, bias_arg, ep_arg, y, i32(c.N), i32(n0), i32(nb), i32(c.CO),
                                 u64(c.OP), i32(hb)]))
    return steps, scr


CUDNN = ("PyTorch eager calls cuDNN (implicit or explicit GEMM, FFT or Winograd algorithms; "
         "TF32 off here)")


def note(form, slices):
    """What a plan does, for a task's reference_note (the caller adds what PyTorch does)."""
    what = {"im2col": "im2col into scratch, then the convolution as a strided-batched cuBLAS "
                      "SGEMM per (image, group) (TF32 off)",
            "gather": "the transposed convolution in its gather form (stride 1): im2col of the "
                      "taps that land on each output, then a strided-batched cuBLAS SGEMM per "
                      "(image, group) (TF32 off)",
            "col2im": "a strided-batched cuBLAS SGEMM per (image, group) (TF32 off) of the "
                      "transposed weights with the input into a column buffer, then col2im as a "
                      "gather (each output sums its taps in a fixed order; no atomics)"}[form]
    if slices > 1:
        what += ", in %d slices of the batch (the whole batch's column buffer would pass the " \
                "4 GiB scratch limit)" % slices
    return what
