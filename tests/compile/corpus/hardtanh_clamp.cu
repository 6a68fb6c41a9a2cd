#include <algorithm>

extern "C" __global__ void hardtanh_kernel(const float* __restrict__ x, float* __restrict__ out,
                                           float min_val, float max_val, long n)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = std::min(std::max(x[i], min_val), max_val);
}
