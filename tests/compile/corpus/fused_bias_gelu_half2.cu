#include <cuda_fp16.h>
#include <math.h>

__device__ __forceinline__ float gelu(float x) {
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

extern "C" __global__ void bias_gelu_half2(__half2* __restrict__ x, const __half2* __restrict__ bias, int rows, int cols2) {
    int r = blockIdx.y;
    for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols2; c += gridDim.x * blockDim.x) {
        float2 v = __half22float2(__hadd2(x[r * cols2 + c], bias[c]));
        x[r * cols2 + c] = __floats2half2_rn(gelu(v.x), gelu(v.y));
    }
}
