// Reference for KernelBench level 2 problem 69_Conv2d_HardSwish_ReLU.
// The convolution (stride 1, no padding) as one implicit-GEMM kernel (fp32-accurate: fp32 FMAs, or 3xTF32
// on the tensor cores for a 128-channel tile) that applies the bias and the
// epilogue as it stores, then: the bias and v = hardswish(v) = v * min(max(v + 3, 0), 6) / 6, then relu(v).
// PyTorch eager calls cuDNN for the convolution and runs one kernel per following op.

__device__ static inline float hardswish_f(float v) { return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f; }

// Convolution as im2col + cuBLAS SGEMM (tools/tasks/conv_gemm.py). Every kernel takes
// three spatial axes (D, H, W); a 1-D or 2-D convolution passes size-1 leading axes
// with kernel 1, stride 1, padding 0, dilation 1. A warp handles a segment of at most
// CONV_SPAN elements of one row (the lanes stride along it), or rb whole rows shorter
// than that in sequence, so the index decoding is paid once per warp step and the
// following rows advance the indices by carries. 64-bit offsets throughout.
#define CONV_SPAN 1024

// The epilogue of a task: v is the convolution's value (bias included) at output
// channel co; ep is the task's extra epilogue operand (unused by most).
static __device__ inline float conv_epilogue(float v, int co, const float* __restrict__ ep)
{
        (void)co;
        (void)ep;
        v = hardswish_f(v);
        v = fmaxf(v, 0.0f);
        return v;
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
#define IG_BK 8
#define IG_BN 128

// IG_TC: the tile's products on the tensor cores, fp32-accurate: each operand is split into
// a TF32 high part and a TF32 remainder (hi = tf32(v), lo = tf32(v - hi)) and each product is
// lo*hi' + hi*lo' + hi*hi' (three m16n8k8 TF32 MMAs: the "3xTF32" of CUTLASS's fast-accurate
// mode; only lo*lo', ~2^-22 relative, is dropped). The MMAs of one k step of 8 sum into a
// fresh fragment, which is added to the accumulator with an fp32 add: chained across the
// whole k loop, the MMA's own accumulation (not rounded to nearest) erred up to 10x more
// than fp32 FMAs at k = 2240. The CPU shim runs the same fragments through a plain per-warp
// product.
#define IG_TC 0

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

extern "C" __global__ void __launch_bounds__(256, 2) conv_igemm_m64(const float* __restrict__ x,
        const float* __restrict__ wp, const int* __restrict__ tab, const float* __restrict__ bias,
        const float* __restrict__ ep, float* __restrict__ y, int N, int CI, int CO, int cig, int cog,
        int cogp, int Kp, int ID, int IH, int IW, int OD, int OH, int OW, int JD, int JH, int JW,
        int MD, int MH, int MW, int SD, int SH, int SW, int FD, int FH, int FW, int has_bias)
{
        conv_igemm_tile<64>(x, wp, tab, bias, ep, y, N, CI, CO, cig, cog, cogp, Kp, ID, IH, IW, OD,
                                OH, OW, JD, JH, JW, MD, MH, MW, SD, SH, SW, FD, FH, FW, has_bias);
}
