// Reference for KernelBench level 1 problem 44_Average_Pooling_1D: 1D average pooling with kernel K, stride S, padding PAD (nn.AvgPool1d, count_include_pad=True, ceil_mode=False).
// Row-tiled. A block of 256 threads computes a tile of up to 4096 outputs: TH rows
// (n, c) by TW positions along the last axis, TW = min(1024, OW rounded up to 32) and TH
// = min(4096 / TW, OH); the plan's grid uses the same formulas. The 1D task is the 2D
// scheme over one plane [N*C, L] whose vertical window is one tap: H = OH = N*C, so a
// tile covers several rows. The block stages the input span of the tile's windows in
// shared memory, each staged row placed at the offset that makes it whole 16-byte chunks
// of x: a thread first issues all its loads (coalesced float4 loads, scalar ones for a
// chunk that straddles an edge of the input row; padding is stored as zeros,
// count_include_pad=True: the divisor is always K), then stores them. The threads then
// compute the outputs from shared memory and store them coalesced (a warp writes
// consecutive outputs). With S == 1 and 2 <= K <= KMAX the window is unrolled (a thread
// computes TWMAX / TPB outputs of a row, TPB apart, and reads each tap of them at fixed
// offsets from one address); any other stride, padding or dilation takes the generic
// loop, in which they only move the taps. A tile whose span exceeds the buffer is done
// in slices of output rows; one whose window alone exceeds it (never at the task's
// shapes) reads its taps from x directly. Offsets into x and y are 64-bit.
#define TPB 256
#define OUTS 4096        /* outputs of a block's tile */
#define TWMAX 1024       /* the tile's widest extent along the last axis */
#define CAP 5120        /* floats of staged input (20 KiB), a multiple of 4 * TPB */
#define KMAX 8          /* widest window with an unrolled path */

static __device__ int pool_min(int a, int b)
{
        return a < b ? a : b;
}

// The staged row of input row ih begins (la + (ih mod 4) * (W mod 4)) mod 4
// floats into its pitch, where la is the lead of input row 0 (see the kernel).
static __device__ int pool_lead(int la, int lw, int ih)
{
        return (la + (ih & 3) * lw) & 3;
}

// S == 1, K == KT: thread t computes columns t + TPB * j (j < TWMAX / TPB) of
// each output row of the slice (staged row r is output row r). A tap is one
// address and TWMAX / TPB shared loads at fixed offsets from it.
template <int KT>
static __device__ void pool_rows_s1(const float* tile, int pitch, int la, int lw, int ih0,
        int ch, int nw, int DW, float* yr, int OW)
{
        const int V = TWMAX / TPB;
        int c = threadIdx.x;
        for (int r = 0; r < ch; r++) {
                const float* t = tile + r * pitch + pool_lead(la, lw, ih0 + r) + c;
                float acc[V];
#pragma unroll
                for (int j = 0; j < V; j++)
                        acc[j] = 0.0f;
#pragma unroll
                for (int kw = 0; kw < KT; kw++) {
#pragma unroll
                        for (int j = 0; j < V; j++)
                                if (c + j * TPB < nw)
                                        acc[j] += t[kw * DW + j * TPB];
                }
#pragma unroll
                for (int j = 0; j < V; j++)
                        if (c + j * TPB < nw)
                                yr[j * TPB] = acc[j] / (float)(KT);
                yr += OW;
        }
}

extern "C" __global__ void __launch_bounds__(TPB) avg_pool1d_ref(const float* __restrict__ x,
        float* __restrict__ y, int NC, int L, int OL, int K, int S, int PAD, int DIL)
{
        __shared__ float4 tile4[CAP / 4];
        float* tile = (float*)tile4;
        const float PADV = 0.0f;
        // rows of [N*C, L]: the vertical window is one tap
        const int H = NC, W = L, OH = NC, OW = OL;
        const int KH = 1, SH = 1, PH = 0, DH = 1, KW = K, SW = S, PW = PAD, DW = DIL;
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
        if (slice == 0) {
                for (int i = threadIdx.x; i < nh * nw; i += TPB) {
                        int oh = oh0 + i / nw, ow = ow0 + i % nw;
                        float acc = 0.0f;
                        for (int kh = 0; kh < KH; kh++) {
                                int ih = oh * SH - PH + kh * DH;
                                if (ih < 0 || ih >= H)
                                        continue;
                                for (int kw = 0; kw < KW; kw++) {
                                        int iw = ow * SW - PW + kw * DW;
                                        if (iw < 0 || iw >= W)
                                                continue;
                                        acc += xp[(long long)ih * W + iw];
                                }
                        }
                        yp[(long long)oh * OW + ow] = acc / (float)(K);
                }
                return;
        }
        bool fast = S == 1 && K >= 2 && K <= KMAX;
        int sdr = TPB / p4, sdm = TPB % p4;     // a thread's step through the staged chunks
        int odr = TPB / nw, odc = TPB % nw;     // and through the outputs (generic loop)
        for (int r0 = 0; r0 < nh; r0 += slice) {
                int ch = pool_min(slice, nh - r0);
                int ih0 = (oh0 + r0) * SH - PH;
                int rows = (ch - 1) * SH + (KH - 1) * DH + 1;
                if (r0 > 0)
                        __syncthreads();
                // all of a thread's loads are issued before the first store to shared
                float4 v[CAP / 4 / TPB];
                int r = threadIdx.x / p4, m = threadIdx.x % p4;
#pragma unroll
                for (int u = 0; u < CAP / 4 / TPB; u++) {
                        int ih = ih0 + r;
                        int iw = iw0 - pool_lead(la, lw, ih) + 4 * m;
                        v[u] = make_float4(PADV, PADV, PADV, PADV);
                        if ((int)threadIdx.x + u * TPB < rows * p4 && ih >= 0 && ih < H) {
                                const float* src = xp + (long long)ih * W;
                                if (iw >= 0 && iw + 3 < W) {
                                        v[u] = *(const float4*)(src + iw);
                                } else {
                                        if (iw >= 0 && iw < W)
                                                v[u].x = src[iw];
                                        if (iw + 1 >= 0 && iw + 1 < W)
                                                v[u].y = src[iw + 1];
                                        if (iw + 2 >= 0 && iw + 2 < W)
                                                v[u].z = src[iw + 2];
                                        if (iw + 3 >= 0 && iw + 3 < W)
                                                v[u].w = src[iw + 3];
                                }
                        }
                        m += sdm;
                        r += sdr;
                        if (m >= p4) {
                                m -= p4;
                                r++;
                        }
                }
#pragma unroll
                for (int u = 0; u < CAP / 4 / TPB; u++)
                        if ((int)threadIdx.x + u * TPB < rows * p4)
                                tile4[threadIdx.x + u * TPB] = v[u];
                __syncthreads();
                if (fast) {
                        float* yr = yp + (long long)(oh0 + r0) * OW + ow0 + threadIdx.x;
                        switch (K) {
                        case 2:
                                pool_rows_s1<2>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 3:
                                pool_rows_s1<3>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 4:
                                pool_rows_s1<4>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 5:
                                pool_rows_s1<5>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 6:
                                pool_rows_s1<6>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 7:
                                pool_rows_s1<7>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        case 8:
                                pool_rows_s1<8>(tile, pitch, la, lw, ih0, ch, nw, DW, yr, OW);
                                break;
                        }
                        continue;
                }
                r = threadIdx.x / nw;
                int c = threadIdx.x % nw;
                for (int i = threadIdx.x; i < ch * nw; i += TPB) {
                        float acc = 0.0f;
                        for (int kh = 0; kh < KH; kh++) {
                                int rr = r * SH + kh * DH;
                                const float* t = tile + rr * pitch + pool_lead(la, lw, ih0 + rr) + c * SW;
                                for (int kw = 0; kw < KW; kw++)
                                        acc += t[kw * DW];
                        }
                        yp[(long long)(oh0 + r0 + r) * OW + ow0 + c] = acc / (float)(K);
                        c += odc;
                        r += odr;
                        if (c >= nw) {
                                c -= nw;
                                r++;
                        }
                }
        }
}
