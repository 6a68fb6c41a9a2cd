// Right answer, but it scribbles on its input x afterwards.
extern "C" __global__ void vadd(float *x, const float *z, float *y, int n)
{
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
                y[i] = x[i] + z[i];
                x[i] = 0.0f;
        }
}
