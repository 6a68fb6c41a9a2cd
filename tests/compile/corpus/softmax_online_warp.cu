#include <cuda_runtime.h>
#include <cmath>
#include <cfloat>

// online softmax, one warp per row
extern "C" __global__ void softmax_online(const float* __restrict__ in, float* __restrict__ out, int N, int C) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= N) return;
    const float* x = in + (size_t)warp * C;
    float m = -INFINITY, s = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float v = x[i];
        float nm = fmaxf(m, v);
        s = s * expf(m - nm) + expf(v - nm);
        m = nm;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, o);
        float os = __shfl_xor_sync(0xffffffff, s, o);
        float nm = fmaxf(m, om);
        s = s * expf(m - nm) + os * expf(om - nm);
        m = nm;
    }
    float inv = 1.0f / s;
    for (int i = lane; i < C; i += 32) out[(size_t)warp * C + i] = expf(x[i] - m) * inv;
}
