// Reference for KernelBench level 1 problem 86_conv_depthwise_separable_2D: depthwise-separable convolution: the depthwise KxK stage into scratch t with dwconv2d_ref.

// dwconv2d_ref: a depthwise 2D convolution (CI = G: one input channel per group, CO/G
// filters on it) with per-axis stride, padding and dilation. A block of 32 x 8 threads
// computes a 32 x 32 tile of one output plane (four rows per thread): it stages the
// input rows and columns the tile reads (halo and zero padding included) in shared
// memory, then each output sums its KH*KW taps in a fixed order (fp32 fused
// multiply-adds, bias first). Planes beyond grid z loop. The staged input fits
// DW_SMEM floats for every shape set (the generator checks).
#define DW_TILE 32
#define DW_SMEM 8192
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

// The pointwise stage is, per image n, the GEMM y[n] (CO x OH*OW) = wp (CO x CI) @
// t[n] (CI x OH*OW): rep_weights copies wp once per image into scratch so that one
// strided-batched cuBLAS SGEMM (TF32 off, packed matrices) does all N images.
extern "C" __global__ void rep_weights(const float* __restrict__ w, float* __restrict__ wrep,
        unsigned long long per, unsigned long long total)
{
        unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
        for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
             i += stride)
                wrep[i] = w[i % per];
}
