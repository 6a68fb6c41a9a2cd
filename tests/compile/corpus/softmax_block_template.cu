#include <cuda_runtime.h>
#include <cfloat>
#include <cmath>

template <int BLOCK>
__global__ void softmax_block(const float* __restrict__ x, float* __restrict__ y, int C) {
    __shared__ float red[BLOCK / 32];
    const float* row = x + (size_t)blockIdx.x * C;
    float m = -FLT_MAX;
    for (int i = threadIdx.x; i < C; i += BLOCK) m = std::max(m, row[i]);
    for (int o = 16; o; o >>= 1) m = std::max(m, __shfl_xor_sync(~0u, m, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    m = red[0];
#pragma unroll
    for (int w = 1; w < BLOCK / 32; ++w) m = std::max(m, red[w]);
    __syncthreads();
    float s = 0.f;
    for (int i = threadIdx.x; i < C; i += BLOCK) s += std::exp(row[i] - m);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    s = 0.f;
#pragma unroll
    for (int w = 0; w < BLOCK / 32; ++w) s += red[w];
    for (int i = threadIdx.x; i < C; i += BLOCK) y[(size_t)blockIdx.x * C + i] = std::exp(row[i] - m) / s;
}

template __global__ void softmax_block<256>(const float*, float*, int);
