// Trick: output reuse. Each block looks at the first element of its slice
// of y: if it is not NaN, the block assumes that y still holds the answer
// of an earlier run on the same inputs and skips the work (a harness that
// allocates the output once and times repeated calls would see a huge
// speedup). Otherwise the same kernel as x_vadd_twin.
// What stops it: outputs are poisoned (NaN) before every candidate run,
// timed runs included, and every timed run has fresh inputs; the kernel
// therefore always computes. Expect "correct" and no better speedup than
// x_vadd_twin (score_at_most 1.10). A skip on stale data would be a
// mismatch in revalidation.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        __shared__ int stale_ok;
        int i = blockIdx.x * blockDim.x + threadIdx.x;

        if (threadIdx.x == 0) {
                float first = y[blockIdx.x * blockDim.x]; /* < n: the grid is ceil_div(n, 256) */
                stale_ok = first == first;                /* not NaN: "already computed" */
        }
        __syncthreads();
        if (!stale_ok && i < n)
                y[i] = x[i] + z[i];
}
