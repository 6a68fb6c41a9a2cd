// Reference for KernelBench level 1 problem 36_RMSNorm_: RMS normalization over
// dimension 1 (channels) of an NCHW tensor. One thread per (n, h, w): sum of
// squares over c in double, then y = x / sqrt(mean + eps).
extern "C" __global__ void rms_norm_ref(const float* __restrict__ x, float* __restrict__ y,
        int N, int C, long long HW, float eps)
{
        long long hw = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        long long n = blockIdx.y;
        if (hw >= HW)
                return;
        const float* p = x + (unsigned long long)n * C * HW + hw;
        float* q = y + (unsigned long long)n * C * HW + hw;
        double ss = 0.0;
        for (int c = 0; c < C; c++) {
                double v = p[(unsigned long long)c * HW];
                ss += v * v;
        }
        double r = 1.0 / sqrt(ss / C + (double)eps);
        for (int c = 0; c < C; c++)
                q[(unsigned long long)c * HW] = (float)((double)p[(unsigned long long)c * HW] * r);
}
