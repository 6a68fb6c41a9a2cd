#include <limits>
#include <cuda_runtime.h>

template <typename T>
struct MaxOp {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a > b ? a : b; }
};

template <typename T>
struct SumOp {
    __device__ __forceinline__ T operator()(const T& a, const T& b) const { return a + b; }
};

template <template <typename> class Op, typename T>
__device__ __forceinline__ T warp_all_reduce(T val) {
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) val = Op<T>()(val, __shfl_xor_sync(0xffffffff, val, mask));
    return val;
}

// softmax over rows of length <= 1024, one warp per row, 32 values per lane at most
extern "C" __global__ void warp_softmax(const float* __restrict__ src, float* __restrict__ dst, int rows, int cols) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;
    float vals[32];
    float m = std::numeric_limits<float>::lowest();
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        int c = lane + k * 32;
        vals[k] = c < cols ? src[(size_t)row * cols + c] : std::numeric_limits<float>::lowest();
        m = fmaxf(m, vals[k]);
    }
    m = warp_all_reduce<MaxOp>(m);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        vals[k] = __expf(vals[k] - m);
        s += lane + k * 32 < cols ? vals[k] : 0.f;
    }
    s = warp_all_reduce<SumOp>(s);
#pragma unroll
    for (int k = 0; k < 32; ++k) {
        int c = lane + k * 32;
        if (c < cols) dst[(size_t)row * cols + c] = __fdividef(vals[k], s);
    }
}
