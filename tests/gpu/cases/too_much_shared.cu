// Asks for 1 MB of dynamic shared memory.
extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        extern __shared__ float s[];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] + z[i] : 0.0f;
        __syncthreads();
        if (i < n)
                y[i] = s[threadIdx.x];
}
