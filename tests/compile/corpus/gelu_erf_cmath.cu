#include <cmath>

extern "C" __global__ void gelu_erf(const float* x, float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::erf(v * static_cast<float>(M_SQRT1_2)));
}
