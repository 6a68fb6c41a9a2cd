// Fenced build: thread 0 also writes y[-1], the element just before the
// output. Expect CUDA_ERROR_ILLEGAL_ADDRESS, a store, buffer y, index -1
// (offset -4), thread (0,0,0) of block (0,0,0).
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0) *(volatile float *)(y + i - 1) = 1.0f; /* error.line */
}
