// Right only on its first launch: every later launch adds 1.
__device__ unsigned launches;
__device__ unsigned done;

extern "C" __global__ void vadd(const float *x, const float *z, float *y, int n)
{
        unsigned epoch = *(volatile unsigned *)&launches;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
                y[i] = x[i] + z[i] + (epoch ? 1.0f : 0.0f);
        __syncthreads();
        if (threadIdx.x == 0) {
                __threadfence();
                if (atomicAdd(&done, 1u) == gridDim.x - 1) {
                        done = 0;
                        atomicAdd(&launches, 1u);
                        __threadfence();
                }
        }
}
