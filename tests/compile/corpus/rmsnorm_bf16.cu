#include <cuda_bf16.h>
#include <cmath>

using bf16 = __nv_bfloat16;

extern "C" __global__ void rmsnorm_bf16(bf16* __restrict__ y, const bf16* __restrict__ x, const bf16* __restrict__ weight,
                                        int d, float eps) {
    const bf16* xr = x + (size_t)blockIdx.x * d;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < d; i += blockDim.x) {
        float v = __bfloat162float(xr[i]);
        ss += v * v;
    }
    __shared__ float red[1024];
    red[threadIdx.x] = ss;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float r = 1.0f / std::sqrt(red[0] / d + eps);
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        y[(size_t)blockIdx.x * d + i] = __float2bfloat16(__bfloat162float(xr[i]) * r * __bfloat162float(weight[i]));
}
