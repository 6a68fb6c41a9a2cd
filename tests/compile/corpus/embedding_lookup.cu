#include <cstdint>
#include <cstddef>

extern "C" __global__ void embedding_forward(float* __restrict__ out, const int64_t* __restrict__ ids,
                                             const float* __restrict__ table, std::size_t n_tokens, int dim) {
    std::size_t tok = blockIdx.x;
    if (tok >= n_tokens) return;
    const float* src = table + (std::size_t)ids[tok] * dim;
    for (int d = threadIdx.x; d < dim; d += blockDim.x) out[tok * dim + d] = src[d];
}
