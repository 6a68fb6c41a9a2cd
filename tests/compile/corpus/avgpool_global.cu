#include <cuda_runtime.h>

extern "C" __global__ void global_avg_pool(const float* __restrict__ x, float* __restrict__ y, int HW) {
    // one block per (n, c)
    const float* p = x + (size_t)blockIdx.x * HW;
    float s = 0.f;
    for (int i = threadIdx.x; i < HW; i += blockDim.x) s += p[i];
    __shared__ float sh[32];
    for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = (threadIdx.x < blockDim.x / 32) ? sh[threadIdx.x] : 0.f;
        for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
        if (threadIdx.x == 0) y[blockIdx.x] = s / (float)HW;
    }
}
