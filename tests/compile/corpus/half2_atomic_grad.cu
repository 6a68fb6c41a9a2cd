#include <cuda_fp16.h>
#include <stdint.h>

// accumulate a bias gradient in half2: db[c] += sum over rows of dy[r, c]
extern "C" __global__ void bias_grad_half2(const __half2* __restrict__ dy, __half2* __restrict__ db, int rows, int cols2) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols2) return;
    __half2 acc = __float2half2_rn(0.0f);
    for (int r = blockIdx.y; r < rows; r += gridDim.y) acc = __hadd2(acc, dy[(int64_t)r * cols2 + c]);
    atomicAdd(&db[c], acc);
}

extern "C" __global__ void relu_max_half(const __half* __restrict__ x, __half* __restrict__ y, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __hmax(x[i], __float2half(0.0f));
}
