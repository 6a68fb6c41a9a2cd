// A 4-byte store at a 2-byte offset: CUDA_ERROR_MISALIGNED_ADDRESS (sticky).
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0)
                *(volatile float *)((char *)y + 2 + (n & 0)) = 1.0f;
}
