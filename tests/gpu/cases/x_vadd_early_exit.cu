// Trick: most threads exit at once. Only lane 0 of every warp does its
// element; the other 31 return before touching memory (a checker that
// samples a few outputs, or looks at y[0], sees right answers, and the
// kernel moves 1/32 of the bytes).
// What stops it: every element of every output is compared, and outputs
// start as NaN poison. Expect "incorrect", mismatch, with
// N - N/32 = 1015808 NaN disagreements on the default shape set.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (threadIdx.x & 31)
                return;
        if (i < n)
                y[i] = x[i] + z[i];
}
