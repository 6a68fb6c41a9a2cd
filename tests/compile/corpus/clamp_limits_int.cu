#include <limits.h>
#include <stdint.h>

extern "C" __global__ void quantize_int8(const float* __restrict__ x, int8_t* __restrict__ q, float inv_scale, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = __float2int_rn(x[i] * inv_scale);
        v = max(SCHAR_MIN, min(SCHAR_MAX, v));
        q[i] = (int8_t)v;
    }
}
