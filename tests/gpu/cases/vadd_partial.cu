// Writes only the first half of the output: the rest keeps the NaN poison.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n / 2; i += gridDim.x * blockDim.x)
                y[i] = x[i] + z[i];
}
