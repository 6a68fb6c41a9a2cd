#include <stdint.h>

struct Shape {
    int32_t n, c, h, w;
};

__device__ __forceinline__ int64_t offset(const Shape& s, int n, int c, int h, int w) {
    return (((int64_t)n * s.c + c) * s.h + h) * s.w + w;
}

// NCHW to NHWC
extern "C" __global__ void nchw_to_nhwc(const float* __restrict__ in, float* __restrict__ out, Shape s) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t total = (int64_t)s.n * s.c * s.h * s.w;
    if (i >= total) return;
    int c = i % s.c;
    int w = (i / s.c) % s.w;
    int h = (i / ((int64_t)s.c * s.w)) % s.h;
    int n = i / ((int64_t)s.c * s.w * s.h);
    out[i] = in[offset(s, n, c, h, w)];
}
