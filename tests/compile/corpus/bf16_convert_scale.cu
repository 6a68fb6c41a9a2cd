#include <cuda_bf16.h>
#include <cstdint>

extern "C" __global__ void f32_to_bf16_scaled(const float* __restrict__ in, __nv_bfloat16* __restrict__ out, float scale, uint32_t n) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __float2bfloat16_rn(in[i] * scale);
}

extern "C" __global__ void bf16_add(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* c, uint32_t n2) {
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n2) c[i] = __hadd2(a[i], b[i]);
}
