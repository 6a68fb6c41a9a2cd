#include <cuda_fp16.h>

// depthwise 3x3, NHWC with C even, half2 over channel pairs
extern "C" __global__ void depthwise3x3_half2(const __half2* __restrict__ in, const __half2* __restrict__ w,
                                              __half2* __restrict__ out, int H, int W, int C2) {
    int c = blockIdx.z * blockDim.x + threadIdx.x;
    int x = blockIdx.x, y = blockIdx.y;
    if (c >= C2) return;
    __half2 acc = __float2half2_rn(0.f);
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
        for (int dx = -1; dx <= 1; ++dx) {
            int yy = y + dy, xx = x + dx;
            if (yy >= 0 && yy < H && xx >= 0 && xx < W)
                acc = __hfma2(in[(yy * W + xx) * C2 + c], w[((dy + 1) * 3 + dx + 1) * C2 + c], acc);
        }
    out[(y * W + x) * C2 + c] = acc;
}
