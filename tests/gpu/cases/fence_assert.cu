// Fenced build: a failing device assert from thread 3 (what assert()
// expands to, spelled out as in assert.cu so that no header is needed; the
// line it reports is __LINE__). The fence replaces __assertfail with a
// recorded exit: CUDA_ERROR_ASSERT at the line below, thread (3,0,0).
extern "C" __device__ void __assertfail(const char *message, const char *file, unsigned line,
                                        const char *function, decltype(sizeof(0)) size);

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 3) __assertfail("i != 3", __FILE__, __LINE__, "vadd", 1); /* error.line */
}
