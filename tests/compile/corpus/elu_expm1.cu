#include <math.h>
#include <stdint.h>

extern "C" __global__ void elu_kernel(const float* __restrict__ x, float* __restrict__ y, float alpha, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = v > 0.f ? v : alpha * expm1f(v);
    }
}
