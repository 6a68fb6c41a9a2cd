#include <cuda_runtime.h>

// y = A x, one warp per row
extern "C" __global__ void gemv(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int warp_id = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp_id >= rows) return;
    float sum = 0.f;
    for (int c = lane; c < cols; c += 32) sum += __ldg(&A[(size_t)warp_id * cols + c]) * __ldg(&x[c]);
    #pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffff, sum, off);
    if (lane == 0) y[warp_id] = sum;
}
