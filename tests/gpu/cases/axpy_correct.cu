// Correct in-place axpy, four elements per thread where aligned.
extern "C" __global__ void axpy(float a, const float *x, float *y, int n)
{
        int stride = gridDim.x * blockDim.x;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
                y[i] = fmaf(a, x[i], y[i]);
}
