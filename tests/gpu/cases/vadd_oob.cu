// Off by one: also writes y[n], 0 bytes past the end of the output.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
                y[i] = x[i] + z[i];
        if (i == n)
                y[i] = 1.0f;
}
