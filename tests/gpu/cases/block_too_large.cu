// Correct code, launched with 2048 threads per block (the limit is 1024).
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
                y[i] = x[i] + z[i];
}
