// Fenced build: off by one, thread i == n writes y[n], one element past the
// end of the output (the grid covers it). The fence's ranges are exact, so
// the store is stopped before it runs: CUDA_ERROR_ILLEGAL_ADDRESS named as
// y[N] (N of the first shape set), from thread (0,0,0) of block N / 256,
// at the line below; the context and the worker survive.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == n) *(volatile float *)(y + i) = 1.0f; /* error.line */
}
