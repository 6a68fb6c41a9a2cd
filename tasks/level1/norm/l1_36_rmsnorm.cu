// Reference for KernelBench level 1 problem 36_RMSNorm_: RMS normalization over
// dimension 1 (channels) of an NCHW tensor. One thread per (n, h, w) (a warp
// reads 128 contiguous bytes per channel): sum of squares over c in double,
// then y = x / sqrt(mean + eps). Up to CMAX channels each thread keeps its
// column of x in shared memory (its own, so no barrier), loads 16 at a time
// in flight, and x is read from memory once; more channels read it twice.
#define THREADS 128
#define CMAX 64

extern "C" __global__ void __launch_bounds__(THREADS) rms_norm_ref(const float* __restrict__ x,
        float* __restrict__ y, int N, int C, long long HW, float eps)
{
        __shared__ float col[CMAX][THREADS];
        long long hw = (long long)blockIdx.x * THREADS + threadIdx.x;
        long long n = blockIdx.y;
        if (hw >= HW)
                return;
        const float* p = x + (unsigned long long)n * C * HW + hw;
        float* q = y + (unsigned long long)n * C * HW + hw;
        double ss = 0.0;
        if (C <= CMAX) {
#pragma unroll 16
                for (int c = 0; c < C; c++)
                        col[c][threadIdx.x] = p[(unsigned long long)c * HW];
                for (int c = 0; c < C; c++) {
                        double v = col[c][threadIdx.x];
                        ss += v * v;
                }
                double r = 1.0 / sqrt(ss / C + (double)eps);
                for (int c = 0; c < C; c++)
                        q[(unsigned long long)c * HW] = (float)((double)col[c][threadIdx.x] * r);
                return;
        }
        for (int c = 0; c < C; c++) {
                double v = p[(unsigned long long)c * HW];
                ss += v * v;
        }
        double r = 1.0 / sqrt(ss / C + (double)eps);
        for (int c = 0; c < C; c++)
                q[(unsigned long long)c * HW] = (float)((double)p[(unsigned long long)c * HW] * r);
}
