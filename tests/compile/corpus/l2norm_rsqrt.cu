#include <cuda_runtime.h>
#include <math.h>

extern "C" __global__ void l2_normalize(const float* __restrict__ x, float* __restrict__ y, int dim) {
    extern __shared__ float smem[];
    const float* row = x + (size_t)blockIdx.x * dim;
    float* orow = y + (size_t)blockIdx.x * dim;
    float acc = 0.f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) acc += row[i] * row[i];
    smem[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x >> 1; s > 0; s >>= 1) {
        if (threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
        __syncthreads();
    }
    float inv = rsqrtf(fmaxf(smem[0], 1e-12f));
    for (int i = threadIdx.x; i < dim; i += blockDim.x) orow[i] = row[i] * inv;
}
