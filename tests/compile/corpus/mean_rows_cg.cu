#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// one warp per row
extern "C" __global__ void row_mean(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * (blockDim.x / 32) + warp.meta_group_rank();
    if (row >= rows) return;
    float s = 0.0f;
    for (int c = warp.thread_rank(); c < cols; c += warp.size())
        s += x[(size_t)row * cols + c];
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) out[row] = s / cols;
}
