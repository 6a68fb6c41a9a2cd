#include <cmath>
#include <cstdint>

extern "C" __global__ void softplus(const float* x, float* y, std::int32_t n, float beta, float threshold) {
    std::int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float bx = beta * x[i];
        y[i] = bx > threshold ? x[i] : std::log1p(std::exp(bx)) / beta;
    }
}
