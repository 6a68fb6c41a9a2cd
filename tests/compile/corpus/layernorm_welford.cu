#include <cuda_runtime.h>
#include <cmath>

struct Welford { float mean, m2, n; };

__device__ __forceinline__ Welford welford_merge(Welford a, Welford b) {
    float n = a.n + b.n;
    if (n == 0.f) return {0.f, 0.f, 0.f};
    float d = b.mean - a.mean;
    float mean = a.mean + d * b.n / n;
    return {mean, a.m2 + b.m2 + d * d * a.n * b.n / n, n};
}

// one warp per row
extern "C" __global__ void layernorm_forward(float* __restrict__ out, const float* __restrict__ inp,
                                             const float* __restrict__ weight, const float* __restrict__ bias,
                                             int N, int C, float eps) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    Welford w{0.f, 0.f, 0.f};
    for (int i = lane; i < C; i += 32) {
        Welford one{x[i], 0.f, 1.f};
        w = welford_merge(w, one);
    }
    for (int o = 16; o > 0; o >>= 1) {
        Welford other{__shfl_xor_sync(0xffffffffu, w.mean, o), __shfl_xor_sync(0xffffffffu, w.m2, o),
                      __shfl_xor_sync(0xffffffffu, w.n, o)};
        w = welford_merge(w, other);
    }
    float rstd = 1.0f / std::sqrt(w.m2 / C + eps);
    for (int i = lane; i < C; i += 32)
        out[(size_t)row * C + i] = (x[i] - w.mean) * rstd * weight[i] + bias[i];
}
