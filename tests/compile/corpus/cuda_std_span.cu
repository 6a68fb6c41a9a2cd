#include <cuda/std/cstdint>
#include <cuda/std/limits>

extern "C" __global__ void saturating_add_u8(const cuda::std::uint8_t* a, const cuda::std::uint8_t* b,
                                             cuda::std::uint8_t* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned s = unsigned(a[i]) + unsigned(b[i]);
        c[i] = s > cuda::std::numeric_limits<cuda::std::uint8_t>::max() ? 255 : (cuda::std::uint8_t)s;
    }
}
