#include <cfloat>
#include <algorithm>

extern "C" __global__ void maxpool2d(const float* input, float* output, int C, int H, int W, int k, int stride) {
    int OH = (H - k) / stride + 1, OW = (W - k) / stride + 1;
    int ow = blockIdx.x * blockDim.x + threadIdx.x;
    int oh = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.z;
    if (ow >= OW || oh >= OH || c >= C) return;
    float m = -FLT_MAX;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++)
            m = std::max(m, input[(c * H + oh * stride + i) * W + ow * stride + j]);
    output[(c * OH + oh) * OW + ow] = m;
}
