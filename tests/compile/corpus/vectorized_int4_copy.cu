#include <cstdint>
#include <cstddef>
#include <algorithm>

namespace kernels {

__device__ __forceinline__ void copy16(const void* src, void* dst) {
    *reinterpret_cast<int4*>(dst) = __ldg(reinterpret_cast<const int4*>(src));
}

}  // namespace kernels

// copies n bytes, 16 at a time where it can, the tail byte by byte
extern "C" __global__ void memcpy_vec16(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst, std::size_t n) {
    const std::size_t n16 = n / 16;
    const std::size_t stride = (std::size_t)gridDim.x * blockDim.x;
    for (std::size_t i = (std::size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
        kernels::copy16(src + i * 16, dst + i * 16);
    const std::size_t tail = std::min<std::size_t>(n - n16 * 16, 15);
    if (blockIdx.x == 0 && threadIdx.x < tail) dst[n16 * 16 + threadIdx.x] = src[n16 * 16 + threadIdx.x];
}
