#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" __global__ void gelu_half(const half* __restrict__ x, half* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        half v = x[i];
        half one = __float2half(1.0f);
        half k = __float2half(1.702f);
        y[i] = __hmul(v, __hdiv(one, __hadd(one, hexp(__hneg(__hmul(k, v))))));
    }
}
