#include <cstdint>
#include <climits>

__device__ __forceinline__ uint32_t hash32(uint32_t x) {
    x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16;
    return x;
}

extern "C" __global__ void dropout(const float* __restrict__ x, float* __restrict__ y, float p, uint32_t seed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float u = (float)hash32(seed ^ (uint32_t)i) / (float)UINT_MAX;
        y[i] = u < p ? 0.0f : x[i] / (1.0f - p);
    }
}
