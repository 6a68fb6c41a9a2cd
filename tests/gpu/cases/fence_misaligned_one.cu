// Fenced build: thread 0 also stores a float 2 bytes into its output, a
// misaligned address inside the buffer. Expect
// CUDA_ERROR_MISALIGNED_ADDRESS, a store, buffer y at offset 2.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0) *(volatile float *)((char *)y + 2) = 1.0f; /* error.line */
}
