#include <cub/block/block_reduce.cuh>

template <int BLOCK_THREADS>
__device__ void sum_rows(const float* in, float* out, int cols) {
    using BlockReduce = cub::BlockReduce<float, BLOCK_THREADS>;
    __shared__ typename BlockReduce::TempStorage temp;
    float v = 0.f;
    for (int i = threadIdx.x; i < cols; i += BLOCK_THREADS) v += in[(size_t)blockIdx.x * cols + i];
    float total = BlockReduce(temp).Sum(v);
    if (threadIdx.x == 0) out[blockIdx.x] = total;
}

extern "C" __global__ void row_sum_128(const float* in, float* out, int cols) { sum_rows<128>(in, out, cols); }
