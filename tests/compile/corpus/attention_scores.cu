#include <cuda_runtime.h>
#include <cmath>

// scores[b,h,i,j] = (q[b,h,i,:] . k[b,h,j,:]) / sqrt(d), causal mask with -INFINITY
extern "C" __global__ void attn_scores_causal(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ scores,
                                              int BH, int T, int D) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int i = blockIdx.y;
    int bh = blockIdx.z;
    if (j >= T || i >= T || bh >= BH) return;
    float* out = scores + ((size_t)bh * T + i) * T;
    if (j > i) { out[j] = -INFINITY; return; }
    const float* qi = q + ((size_t)bh * T + i) * D;
    const float* kj = k + ((size_t)bh * T + j) * D;
    float dot = 0.f;
    for (int d = 0; d < D; ++d) dot += qi[d] * kj[d];
    out[j] = dot / std::sqrt(static_cast<float>(D));
}
