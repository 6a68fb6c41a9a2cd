// A failing device assert (what assert() expands to, spelled out so that no
// header is needed): CUDA_ERROR_ASSERT (sticky).
extern "C" __device__ void __assertfail(const char *message, const char *file, unsigned line,
                                        const char *function, decltype(sizeof(0)) size);

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 3)
                __assertfail("i != 3", "assert.cu", 13, "vadd", 1);
}
