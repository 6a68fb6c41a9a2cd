#include <cuda_runtime.h>

// NCHW, stride 1, no padding
extern "C" __global__ void conv2d_forward(const float* __restrict__ input, const float* __restrict__ weight,
                                          const float* __restrict__ bias, float* __restrict__ output,
                                          int N, int C, int H, int W, int K, int R, int S) {
    int OH = H - R + 1, OW = W - S + 1;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int total = N * K * OH * OW;
    if (idx >= total) return;
    int ow = idx % OW;
    int oh = (idx / OW) % OH;
    int k = (idx / (OW * OH)) % K;
    int n = idx / (OW * OH * K);
    float acc = bias ? bias[k] : 0.0f;
    for (int c = 0; c < C; ++c)
        for (int r = 0; r < R; ++r)
#pragma unroll 3
            for (int s = 0; s < S; ++s)
                acc += input[((n * C + c) * H + oh + r) * W + ow + s] * weight[((k * C + c) * R + r) * S + s];
    output[idx] = acc;
}
