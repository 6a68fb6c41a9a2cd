// Writes 1 TB past its output: CUDA_ERROR_ILLEGAL_ADDRESS (sticky).
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == 0)
                *(volatile float *)(y + (1ll << 38)) = 1.0f;
}
