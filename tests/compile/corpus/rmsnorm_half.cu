#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" __global__ void rmsnorm_fp16(__half* __restrict__ out, const __half* __restrict__ in,
                                        const __half* __restrict__ w, int rows, int cols, float eps) {
    int row = blockIdx.x;
    if (row >= rows) return;
    __shared__ float partial[32];
    float acc = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = __half2float(in[(size_t)row * cols + i]);
        acc += v * v;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
        if (threadIdx.x == 0) partial[0] = rsqrtf(acc / cols + eps);
    }
    __syncthreads();
    float scale = partial[0];
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        size_t k = (size_t)row * cols + i;
        out[k] = __float2half(__half2float(in[k]) * scale * __half2float(w[i]));
    }
}
