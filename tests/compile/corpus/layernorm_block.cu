#include <cuda_runtime.h>
#include <math.h>
#include <assert.h>

#define THREADS 256

extern "C" __global__ void __launch_bounds__(THREADS) layer_norm(const float* __restrict__ x, const float* __restrict__ gamma,
                                                                  const float* __restrict__ beta, float* __restrict__ y,
                                                                  int hidden, float eps) {
    assert(blockDim.x == THREADS);
    __shared__ float s_sum[THREADS];
    __shared__ float s_sq[THREADS];
    const float* xr = x + (size_t)blockIdx.x * hidden;
    float sum = 0.f, sq = 0.f;
    for (int i = threadIdx.x; i < hidden; i += THREADS) {
        float v = xr[i];
        sum += v;
        sq += v * v;
    }
    s_sum[threadIdx.x] = sum;
    s_sq[threadIdx.x] = sq;
    __syncthreads();
#pragma unroll
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
            s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
        }
        __syncthreads();
    }
    float mean = s_sum[0] / hidden;
    float var = s_sq[0] / hidden - mean * mean;
    float inv = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < hidden; i += THREADS)
        y[(size_t)blockIdx.x * hidden + i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
}
