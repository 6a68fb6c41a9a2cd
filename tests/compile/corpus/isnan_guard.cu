#include <cmath>
#include <limits>

extern "C" __global__ void nan_to_num(float* x, int n, float posinf, float neginf) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    if (std::isnan(v)) v = 0.0f;
    else if (std::isinf(v)) v = v > 0 ? posinf : neginf;
    x[i] = std::min(v, std::numeric_limits<float>::max());
}
