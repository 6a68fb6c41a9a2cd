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
import itertools

from check_tasks import ev
from taskgen import launch, gemm, i32, u64, scratch

SCRATCH_BUDGET = 4 << 30          # common/limits.h LIMIT_SCRATCH_BYTES_MAX
PLAN_STEPS_MAX = 64               # common/limits.h LIMIT_LAUNCHES_MAX
SPAN = 1024                       # output-row elements one warp handles per step (CONV_SPAN)
# Rough H100 rates, used only to choose between the forms.
GEMM_FLOPS = 40e12
MEM_BYTES = 2.5e12
IGEMM_FLOPS = 30e12               # the implicit kernel's rate, padding included (H100, measured)
IGEMM_BM = (32, 64, 128)          # its output-channel tiles (conv_igemm_m32, _m64, _m128)
IGEMM_BK = 8                      # its k step (rows of A and B per shared-memory stage)
IGEMM_TC_BM = 128                 # tiles this wide multiply on the tensor cores (3xTF32), the
                                  # narrower ones with fp32 FMAs (measured: docs/tasks.md)

COMMON = r'''
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
'''

COL = r'''
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


IGEMM = r'''
// The implicit-GEMM form (tools/tasks/conv_gemm.py): per group g and phase, the GEMM
// y[n, g*cog + co, o] = sum over k of A[k][co] * B[k][(n, j)] with B gathered from x as the
// tile is loaded (no column buffer is ever written). Output o = j*M + r per axis, where the
// phase's residue r runs over [0, M): M = 1 for a standard convolution (one phase), M = S for a
// transposed one, whose every phase is a stride-1 gather over the taps that land on it. Row k
// of a phase is (c, tap): B[k][(n, j)] = x[n, g*cig + c, j*SA + F + t] per axis, zero outside
// the input, with the tap's displacement t = tap*DIL (standard: SA = S, F = -PAD) or
// t = (r + PAD - tap*DIL) / S where that divides exactly (transposed: SA = 1, F = 0).
// A block computes a BM x 128 tile (output channels by (n, j) positions), 256 threads, k in
// steps of 8 through double-buffered shared memory (the next step's global loads in
// registers while this step's products run): fp32 FMAs, BM/16 x 8 outputs a thread, or for
// BM = 128 the tensor cores in 3xTF32 (IG_TC below), fp32-accurate either way (plain TF32
// is not); the bias and the task's epilogue applied as the tile is stored.
#define IG_BK @@BK@@
#define IG_BN 128

// IG_TC: the tile's products on the tensor cores, fp32-accurate: each operand is split into
// a TF32 high part and a TF32 remainder (hi = tf32(v), lo = tf32(v - hi)) and each product is
// lo*hi' + hi*lo' + hi*hi' (three m16n8k8 TF32 MMAs: the "3xTF32" of CUTLASS's fast-accurate
// mode; only lo*lo', ~2^-22 relative, is dropped). The MMAs of one k step of 8 sum into a
// fresh fragment, which is added to the accumulator with an fp32 add: chained across the
// whole k loop, the MMA's own accumulation (not rounded to nearest) erred up to 10x more
// than fp32 FMAs at k = 2240. The CPU shim runs the same fragments through a plain per-warp
// product.
#define IG_TC @@TC@@

static __device__ inline float ig_tf32(float v)
{
#ifdef __CUDA_ARCH__
        unsigned u;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
        return __uint_as_float(u);
#else
        unsigned u;
        memcpy(&u, &v, 4);
        u = (u + 0x1000u) & 0xffffe000u;        // to nearest, ties away: cvt.rna
        memcpy(&v, &u, 4);
        return v;
#endif
}

#if IG_TC
static __device__ inline unsigned ig_bits(float v)
{
#ifdef __CUDA_ARCH__
        return __float_as_uint(v);
#else
        unsigned u;
        memcpy(&u, &v, 4);
        return u;
#endif
}

// d = A (16x8, row) * B (8x8, col) + c for the warp: a[0..3] = A[g][t], A[g+8][t], A[g][t+4],
// A[g+8][t+4] and b[0..1] = B[t][g], B[t+4][g] of lane 4g + t; d[0..3] (and c[0..3]) =
// D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1] (PTX's m16n8k8 .tf32 fragments).
static __device__ inline void ig_mma(float* d, const float* c, const unsigned* a, const unsigned* b)
{
#ifdef __CUDA_ARCH__
        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%10,%11,%12,%13};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
              "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
        static unsigned sa[32][32][4], sb[32][32][2];
        int tid = threadIdx.x, w = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
        for (int i = 0; i < 4; i++)
                sa[w][lane][i] = a[i];
        sb[w][lane][0] = b[0];
        sb[w][lane][1] = b[1];
        __syncthreads();
        float e[4];
        for (int i = 0; i < 4; i++) {
                int r = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
                float s = c[i];
                for (int k = 0; k < 8; k++) {
                        float av, bv;
                        unsigned ua = sa[w][(r % 8) * 4 + k % 4][(r >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)];
                        unsigned ub = sb[w][col * 4 + k % 4][k >= 4 ? 1 : 0];
                        memcpy(&av, &ua, 4);
                        memcpy(&bv, &ub, 4);
                        s += av * bv;
                }
                e[i] = s;
        }
        for (int i = 0; i < 4; i++)
                d[i] = e[i];
        __syncthreads();
#endif
}
#endif

// The taps along one axis that land on residue r: their count, and for i < count the i-th
// one's index *q and input displacement *t.
static __device__ inline int ig_axis(int r, int K, int S, int P, int D, int tr, int i, int* q, int* t)
{
        int n = 0;
        for (int k = 0; k < K; k++) {
                int v = r + P - k * D;
                if (tr && ((v % S) + S) % S != 0)
                        continue;
                if (n == i) {
                        *q = k;
                        *t = tr ? v / S : k * D;
                }
                n++;
        }
        return n;
}

// The packed operands, per phase ph (residues over M): wp[ph][g][k][co'] (k over Kp =
// cig*KK rounded up to 8, co' over cogp = cog rounded up to the tile's BM; zeros past the
// phase's taps and in the padding) and tab[ph][0] = {rows of the phase rounded up to 8},
// tab[ph][1 + k] = {offset of the row's input element from its position's window origin
// (c*ID*IH*IW plus the displacement), displacement along D, H, W}; a row past the phase's
// taps has a displacement no position reaches, so it reads as zeros. The offsets fit in 32
// bits (choose() checks every shape set: _implicit_ok).
extern "C" __global__ void conv_igemm_pack(const float* __restrict__ w, float* __restrict__ wp,
        int* __restrict__ tab, int G, int cig, int cog, int cogp, int Kp, int MD, int MH, int MW,
        int KD, int KH, int KW, int SD, int SH, int SW, int PD, int PH, int PW, int DD, int DH,
        int DW, int ID, int IH, int IW, int tr)
{
        int KK = KD * KH * KW, nph = MD * MH * MW;
        unsigned long long nw = (unsigned long long)nph * G * Kp * cogp;
        unsigned long long total = nw + (unsigned long long)nph * (Kp + 1);
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride) {
                unsigned long long r = i < nw ? i : i - nw;
                int co = 0, k, g = 0, ph;
                if (i < nw) {
                        co = conv_split(&r, cogp);
                        k = conv_split(&r, Kp);
                        g = conv_split(&r, G);
                } else {
                        k = conv_split(&r, Kp + 1) - 1;
                }
                ph = (int)r;
                int rd = ph / (MH * MW), rh = ph / MW % MH, rw = ph % MW, q, t;
                int nd = ig_axis(rd, KD, SD, PD, DD, tr, -1, &q, &t);
                int nh = ig_axis(rh, KH, SH, PH, DH, tr, -1, &q, &t);
                int nn = ig_axis(rw, KW, SW, PW, DW, tr, -1, &q, &t);
                int T = nd * nh * nn, qd = 0, qh = 0, qw = 0, td = 0, th = 0, tw = 0;
                bool tap = k >= 0 && k < cig * T;
                if (tap) {
                        int e = k % T;
                        ig_axis(rd, KD, SD, PD, DD, tr, e / (nh * nn), &qd, &td);
                        ig_axis(rh, KH, SH, PH, DH, tr, e / nn % nh, &qh, &th);
                        ig_axis(rw, KW, SW, PW, DW, tr, e % nn, &qw, &tw);
                }
                int c = tap ? k / T : 0, kt = (qd * KH + qh) * KW + qw;
                if (i < nw) {
                        float v = 0.0f;
                        if (tap && co < cog)
                                v = tr ? w[(((unsigned long long)g * cig + c) * cog + co) * KK + kt]
                                       : w[(((unsigned long long)g * cog + co) * cig + c) * KK + kt];
                        wp[i] = v;
                        continue;
                }
                int* e = tab + 4 * (unsigned long long)(i - nw);
                if (k < 0) {
                        e[0] = (cig * T + IG_BK - 1) / IG_BK * IG_BK;
                        e[1] = e[2] = e[3] = 0;
                } else {
                        e[0] = (int)(((long long)c * ID + td) * IH * (long long)IW + (long long)th * IW + tw);
                        e[1] = tap ? td : -(1 << 30);
                        e[2] = th;
                        e[3] = tw;
                }
        }
}

template <int BM>
static __device__ inline void conv_igemm_tile(const float* __restrict__ x, const float* __restrict__ wp,
        const int* __restrict__ tab, const float* __restrict__ bias, const float* __restrict__ ep,
        float* __restrict__ y, int N, int CI, int CO, int cig, int cog, int cogp, int Kp, int ID,
        int IH, int IW, int OD, int OH, int OW, int JD, int JH, int JW, int MD, int MH, int MW,
        int SD, int SH, int SW, int FD, int FH, int FW, int has_bias)
{
        // TC: 8 warps as 2 (output channels) x 4 (positions), each MT x 4 m16n8 tiles; the
        // shared rows padded by 8 so a fragment's 32 reads hit 32 banks, lo parts beside
        enum { TM = BM / 16, RB = IG_BK / 2, TPR = 256 / IG_BK, AL = BM / TPR, MT = BM / 32,
               PAD = IG_TC ? 8 : 0 };
        alignas(16) __shared__ float As[2][IG_BK][BM + PAD];
        alignas(16) __shared__ float Bs[2][IG_BK][IG_BN + PAD];
        alignas(16) __shared__ float Al[IG_TC ? 2 : 1][IG_BK][IG_TC ? BM + PAD : 1];
        alignas(16) __shared__ float Bl[IG_TC ? 2 : 1][IG_BK][IG_TC ? IG_BN + PAD : 1];
        int tid = threadIdx.x;
        int nph = MD * MH * MW;
        int g = blockIdx.z / nph, ph = blockIdx.z % nph;
        int rd = ph / (MH * MW), rh = ph / MW % MH, rw = ph % MW;
        int co0 = blockIdx.y * BM;
        unsigned long long IP = (unsigned long long)ID * IH * IW;
        unsigned long long P = (unsigned long long)N * JD * JH * JW;
        unsigned long long p0 = (unsigned long long)blockIdx.x * IG_BN;
        const int4* tb = (const int4*)tab + (unsigned long long)ph * (Kp + 1);
        int Kl = tb[0].x;
        tb++;

        // this thread's B column: one (n, j) position, its input base and window origin
        int bc = tid & (IG_BN - 1), br = (tid >> 7) * RB;
        int bd = -(1 << 29), bh = 0, bw = 0;
        long long xb = 0;
        if (p0 + bc < P) {
                unsigned long long r = p0 + bc;
                int jw = conv_split(&r, JW);
                int jh = conv_split(&r, JH);
                int jd = conv_split(&r, JD);
                bd = jd * SD + FD;
                bh = jh * SH + FH;
                bw = jw * SW + FW;
                xb = ((long long)r * CI + (long long)g * cig) * (long long)IP +
                     ((long long)bd * IH + bh) * IW + bw;
        }
        // this thread's A loads: AL consecutive output channels of one k row
        int ar = tid / TPR, ac = (tid % TPR) * AL;
        const float* wg = wp + ((unsigned long long)ph * (CO / cog) + g) * Kp * cogp + co0 + ac;

        float rb[RB], ra[AL];
        // SIMT: acc[i * 8 + j] (row i, column j of the thread's 8 x 8 or TM x 8); TC:
        // acc[(mi * 4 + ni) * 4 + v] (m16n8 tile (mi, ni), fragment element v)
        float acc[TM * 8];
#pragma unroll
        for (int i = 0; i < TM * 8; i++)
                acc[i] = 0.0f;

        // the loads of the k step at k0 into registers, and their stores into buffer buf
#define IG_LOAD(k0) do { \
                _Pragma("unroll") for (int i = 0; i < RB; i++) { \
                        int4 e = tb[(k0) + br + i]; \
                        int id = bd + e.y, ih = bh + e.z, iw = bw + e.w; \
                        rb[i] = ((unsigned)id < (unsigned)ID && (unsigned)ih < (unsigned)IH && \
                                 (unsigned)iw < (unsigned)IW) \
                                ? x[xb + e.x] : 0.0f; \
                } \
                _Pragma("unroll") for (int i = 0; i < AL; i++) \
                        ra[i] = wg[(unsigned long long)((k0) + ar) * cogp + i]; \
        } while (0)
#define IG_STORE(buf) do { \
                _Pragma("unroll") for (int i = 0; i < RB; i++) { \
                        float hi = IG_TC ? ig_tf32(rb[i]) : rb[i]; \
                        Bs[buf][br + i][bc] = hi; \
                        if (IG_TC) \
                                Bl[buf & (IG_TC ? 1 : 0)][br + i][IG_TC ? bc : 0] = ig_tf32(rb[i] - hi); \
                } \
                _Pragma("unroll") for (int i = 0; i < AL; i++) { \
                        float hi = IG_TC ? ig_tf32(ra[i]) : ra[i]; \
                        As[buf][ar][ac + i] = hi; \
                        if (IG_TC) \
                                Al[buf & (IG_TC ? 1 : 0)][ar][IG_TC ? ac + i : 0] = ig_tf32(ra[i] - hi); \
                } \
        } while (0)

        if (Kl > 0) {
                IG_LOAD(0);
                IG_STORE(0);
        }
        __syncthreads();
        int tm = tid >> 4, tn = tid & 15;
        int lane = tid & 31, gq = lane >> 2, tq = lane & 3;
        int mb = ((tid >> 5) & 1) * (BM / 2), nb = (tid >> 6) * 32;
        for (int k0 = 0, cur = 0; k0 < Kl; k0 += IG_BK, cur ^= 1) {
                bool more = k0 + IG_BK < Kl;
                if (more)
                        IG_LOAD(k0 + IG_BK);
#if IG_TC
#pragma unroll
                for (int kk = 0; kk < IG_BK; kk += 8) {
                        unsigned bh[4][2], bl[4][2];
#pragma unroll
                        for (int ni = 0; ni < 4; ni++) {
                                int c = nb + ni * 8 + gq;
                                bh[ni][0] = ig_bits(Bs[cur][kk + tq][c]);
                                bh[ni][1] = ig_bits(Bs[cur][kk + tq + 4][c]);
                                bl[ni][0] = ig_bits(Bl[cur][kk + tq][c]);
                                bl[ni][1] = ig_bits(Bl[cur][kk + tq + 4][c]);
                        }
#pragma unroll
                        for (int mi = 0; mi < MT; mi++) {
                                int r = mb + mi * 16 + gq;
                                unsigned ah[4], al[4];
                                ah[0] = ig_bits(As[cur][kk + tq][r]);
                                ah[1] = ig_bits(As[cur][kk + tq][r + 8]);
                                ah[2] = ig_bits(As[cur][kk + tq + 4][r]);
                                ah[3] = ig_bits(As[cur][kk + tq + 4][r + 8]);
                                al[0] = ig_bits(Al[cur][kk + tq][r]);
                                al[1] = ig_bits(Al[cur][kk + tq][r + 8]);
                                al[2] = ig_bits(Al[cur][kk + tq + 4][r]);
                                al[3] = ig_bits(Al[cur][kk + tq + 4][r + 8]);
#pragma unroll
                                for (int ni = 0; ni < 4; ni++) {
                                        const float z[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
                                        float t[4], *d = &acc[(mi * 4 + ni) * 4];
                                        ig_mma(t, z, al, bh[ni]);
                                        ig_mma(t, t, ah, bl[ni]);
                                        ig_mma(t, t, ah, bh[ni]);
#pragma unroll
                                        for (int v = 0; v < 4; v++)
                                                d[v] += t[v];
                                }
                        }
                }
#else
#pragma unroll
                for (int kk = 0; kk < IG_BK; kk++) {
                        float a[TM], b[8];
                        float4 v = *(const float4*)&Bs[cur][kk][tn * 4];
                        b[0] = v.x; b[1] = v.y; b[2] = v.z; b[3] = v.w;
                        v = *(const float4*)&Bs[cur][kk][64 + tn * 4];
                        b[4] = v.x; b[5] = v.y; b[6] = v.z; b[7] = v.w;
                        if constexpr (TM == 8) {
                                v = *(const float4*)&As[cur][kk][tm * 4];
                                a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
                                v = *(const float4*)&As[cur][kk][64 + tm * 4];
                                a[4] = v.x; a[5] = v.y; a[6] = v.z; a[7] = v.w;
                        } else if constexpr (TM == 4) {
                                v = *(const float4*)&As[cur][kk][tm * 4];
                                a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
                        } else {
#pragma unroll
                                for (int i = 0; i < TM; i++)
                                        a[i] = As[cur][kk][tm * TM + i];
                        }
#pragma unroll
                        for (int i = 0; i < TM; i++)
#pragma unroll
                                for (int j = 0; j < 8; j++)
                                        acc[i * 8 + j] = fmaf(a[i], b[j], acc[i * 8 + j]);
                }
#endif
                if (more)
                        IG_STORE(cur ^ 1);
                __syncthreads();
        }
#undef IG_LOAD
#undef IG_STORE

        // store: the thread's columns come in NG groups of GW consecutive ones (SIMT: tn*4 and
        // 64 + tn*4, 4 each; TC: nb + ni*8 + 2*tq, 2 each), its rows as its A operands were
        // read; one division per group, then (n, j) advances by carries
        enum { NG = IG_TC ? 4 : 2, GW = IG_TC ? 2 : 4, NR = IG_TC ? 2 * MT : TM };
        unsigned long long OHW = (unsigned long long)OH * OW;
#pragma unroll
        for (int h = 0; h < NG; h++) {
                unsigned long long p = p0 + (IG_TC ? nb + h * 8 + 2 * tq : h * 64 + tn * 4);
                if (p >= P)
                        continue;
                unsigned long long n = p;
                int jw = conv_split(&n, JW);
                int jh = conv_split(&n, JH);
                int jd = conv_split(&n, JD);
#pragma unroll
                for (int jj = 0; jj < GW; jj++) {
                        int od = jd * MD + rd, oh = jh * MH + rh, ow = jw * MW + rw;
                        if (n < (unsigned long long)N && od < OD && oh < OH && ow < OW) {
                                float* yp = y + ((n * CO + (unsigned long long)g * cog) * OD + od) * OHW +
                                            (unsigned long long)oh * OW + ow;
#pragma unroll
                                for (int i = 0; i < NR; i++) {
                                        int co = co0 + (IG_TC ? mb + (i >> 1) * 16 + gq + (i & 1) * 8
                                                        : TM == 8 ? (i < 4 ? tm * 4 + i : 64 + tm * 4 + i - 4)
                                                                  : tm * TM + i);
                                        if (co >= cog)
                                                continue;
                                        int cg = g * cog + co;
                                        float v = acc[IG_TC ? (((i >> 1) * 4 + h) * 4 + (i & 1) * 2 + jj)
                                                            : i * 8 + h * 4 + jj] +
                                                  (has_bias ? bias[cg] : 0.0f);
                                        yp[(unsigned long long)co * OD * OHW] = conv_epilogue(v, cg, ep);
                                }
                        }
                        if (++jw == JW) {
                                jw = 0;
                                if (++jh == JH) {
                                        jh = 0;
                                        if (++jd == JD) {
                                                jd = 0;
                                                n++;
                                        }
                                }
                        }
                }
        }
}

extern "C" __global__ void __launch_bounds__(256, 2) conv_igemm_m@@BM@@(const float* __restrict__ x,
        const float* __restrict__ wp, const int* __restrict__ tab, const float* __restrict__ bias,
        const float* __restrict__ ep, float* __restrict__ y, int N, int CI, int CO, int cig, int cog,
        int cogp, int Kp, int ID, int IH, int IW, int OD, int OH, int OW, int JD, int JH, int JW,
        int MD, int MH, int MW, int SD, int SH, int SW, int FD, int FH, int FW, int has_bias)
{
        conv_igemm_tile<@@BM@@>(x, wp, tab, bias, ep, y, N, CI, CO, cig, cog, cogp, Kp, ID, IH, IW, OD,
                                OH, OW, JD, JH, JW, MD, MH, MW, SD, SH, SW, FD, FH, FW, has_bias);
}
'''

def source(epilogue="return v;", form=None):
    """The kernels of `form` (choose()'s; the column forms when None), with `epilogue` (C
    statements over v, co, ep; returns) as the epilogue."""
    body = "\n".join("        " + ln for ln in epilogue.strip("\n").split("\n"))
    if form and form.startswith("implicit"):
        text = COMMON + "\n" + (IGEMM.replace("@@BM@@", str(_bm(form))).replace("@@BK@@", str(IGEMM_BK))
                                .replace("@@TC@@", "1" if _bm(form) >= IGEMM_TC_BM else "0"))
    else:
        text = COMMON + COL
    return text.replace("@@EPILOGUE@@", body).replace("@@SPAN@@", str(SPAN))


def _bm(form):
    """The output-channel tile of an implicit form ("implicit128" -> 128)."""
    return int(form[len("implicit"):])


def _implicit_bm(cog):
    """The smallest of the implicit kernel's output-channel tiles that covers cog (or 128)."""
    for bm in IGEMM_BM:
        if cog <= bm:
            return bm
    return IGEMM_BM[-1]


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


def _axis_phases(o, k, s, p, d, tr):
    """Along one axis, per output phase (one for a standard convolution): its positions
    (ceil(O/S) for a transposed one) and the input displacements of its taps, as the kernel's
    ig_axis enumerates them."""
    if not tr:
        return [(o, [q * d for q in range(k)])]
    return [(-(-o // s), [(r + p - q * d) // s for q in range(k) if (r + p - q * d) % s == 0])
            for r in range(s)]


def _phases(c, params):
    """_axis_phases of every axis of c at params."""
    e = lambda x: ev(x, params)  # noqa: E731
    return [_axis_phases(e(c.O[a]), e(c.K[a]), e(c.S[a]), e(c.P[a]), e(c.D[a]), c.tr) for a in range(3)]


def _implicit_cost(c, default):
    """Rough seconds of the implicit form at params `default`: its FMAs with the tiles'
    padding (output channels to the tile, each phase's k to 8, positions to 128)."""
    e = lambda x: ev(x, default)  # noqa: E731
    cog, cig = e(c.cog), e(c.cig)
    bm = _implicit_bm(cog)
    flops = 0.0
    for (nd, td), (nh, th), (nw, tw) in itertools.product(*_phases(c, default)):
        cols = -(-e(c.N) * nd * nh * nw // 128) * 128
        kl = -(-cig * len(td) * len(th) * len(tw) // IGEMM_BK) * IGEMM_BK
        flops += 2.0 * cols * e(c.G) * (-(-cog // bm) * bm) * kl
    return flops / IGEMM_FLOPS


def _implicit_ok(c, params):
    """Whether the implicit form holds at params: its row offsets (c*ID*IH*IW plus a tap's
    displacement on every axis, taken over every phase) fit in 32 bits and its grid in
    CUDA's limits (groups times phases in z, output-channel tiles in y)."""
    e = lambda x: ev(x, params)  # noqa: E731
    I = [e(v) for v in c.I]
    phases = _phases(c, params)
    reach = [max([abs(t) for _, ts in ax for t in ts] or [0]) for ax in phases]
    off = (e(c.cig) - 1) * I[0] * I[1] * I[2] + reach[0] * I[1] * I[2] + reach[1] * I[2] + reach[2]
    nph = len(phases[0]) * len(phases[1]) * len(phases[2])
    return (off < 2 ** 31 and e(c.G) * nph <= 65535 and
            -(-e(c.cog) // _implicit_bm(e(c.cog))) <= 65535)


def choose(c, default, ytmp=False, shapes=(), exclude=()):
    """((form, slices), None) for the default shape set `default` (a params dict), or
    (None, why). ytmp: the plan's GEMM always writes a scratch slice (a plan() consumer).
    shapes: every shape set's params (the implicit form must hold in each: _implicit_ok);
    exclude: forms not to choose (where a measurement overruled the rough costs)."""
    forms = ["im2col"] if not c.tr else ["gather", "col2im"]
    best = None
    why = []
    n = ev(c.N, default)
    if not ytmp and all(_implicit_ok(c, p) for p in [default, *shapes]):
        forms.append("implicit")
    for form in forms:
        if form in exclude:
            continue
        if form == "gather" and any(ev(s, default) != 1 for s in c.S):
            why.append("the %s form is for stride 1 only" % form)
            continue
        if form == "implicit":
            cost = _implicit_cost(c, default)
            if best is None or cost < best[2]:
                best = ("implicit%d" % _implicit_bm(ev(c.cog, default)), 1, cost)
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
    if form.startswith("implicit"):
        assert consumer is None, "the implicit form writes y itself: no scratch for a consumer"
        bm = _bm(form)
        cogp = "ceil_div(%s, %d) * %d" % (c.cog, bm, bm)
        kp = "ceil_div(%s * %s, %d) * %d" % (c.cig, c.KK, IGEMM_BK, IGEMM_BK)
        # per axis: output step M (the phases' residues), phase-grid size J, origin stride and
        # offset (standard: o*S - PAD; transposed: j, the displacement in the tap table)
        M = c.S if c.tr else ["1"] * 3
        J = ["ceil_div(%s, %s)" % (o, s) for o, s in zip(c.O, c.S)] if c.tr else c.O
        SA = ["1"] * 3 if c.tr else c.S
        F = ["0"] * 3 if c.tr else ["0 - (%s)" % q for q in c.P]
        nph = _prod(M)
        wcount = "(%s) * (%s) * (%s) * (%s)" % (nph, c.G, kp, cogp)
        scr.append(scratch("wp", "f32", wcount))
        scr.append(scratch("tab", "i32", "4 * (%s) * (%s + 1)" % (nph, kp)))
        steps.append(launch("conv_igemm_pack",
                            ["min(ceil_div(%s + (%s) * (%s + 1), 256), 65536)" % (wcount, nph, kp)], [256],
                            [w, "wp", "tab", i32(c.G), i32(c.cig), i32(c.cog), i32(cogp), i32(kp)] +
                            [i32(v) for v in M + c.K + c.S + c.P + c.D + c.I] +
                            [i32("1" if c.tr else "0")]))
        steps.append(launch("conv_igemm_m%d" % bm,
                            ["ceil_div((%s) * %s, 128)" % (c.N, _prod(J)), "ceil_div(%s, %d)" % (c.cog, bm),
                             "(%s) * %s" % (c.G, nph)], [256],
                            [x, "wp", "tab", bias_arg, ep_arg, y, i32(c.N), i32(c.CI), i32(c.CO),
                             i32(c.cig), i32(c.cog), i32(cogp), i32(kp)] +
                            [i32(v) for v in c.I + c.O + J + M + SA + F] + [i32(hb)]))
        return steps, scr
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
    if form.startswith("implicit"):
        return ("one implicit-GEMM kernel (the im2col tiles formed in shared memory, never "
                "written out; %d output channels by 128 output positions per block, %s), the "
                "bias and any epilogue applied as the tile is stored"
                % (_bm(form), "3xTF32 on the tensor cores (each operand a TF32 high part and "
                   "remainder, fp32-accurate; plain TF32 is not)" if _bm(form) >= IGEMM_TC_BM
                   else "fp32 FMA, no TF32"))
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
