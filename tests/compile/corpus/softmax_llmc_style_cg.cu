// In the style of llm.c's train_gpt2.cu softmax (cooperative groups, a warp
// per row, float4 reads, online max/sum), written for this corpus.
#include <stdio.h>
#include <stdlib.h>
#include <float.h>
#include <math.h>
#include <assert.h>
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void softmax_forward_kernel7(float* out, const float* inp, int N, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (idx >= N) return;
    assert(C % 4 == 0);
    const float4* x = reinterpret_cast<const float4*>(inp + (size_t)idx * C);
    float maxval = -FLT_MAX;
    float sumval = 0.0f;
    for (int i = warp.thread_rank(); i < C / 4; i += warp.size()) {
        float4 v = x[i];
        float vs[4] = {v.x, v.y, v.z, v.w};
        for (int k = 0; k < 4; ++k) {
            float old = maxval;
            maxval = fmaxf(maxval, vs[k]);
            sumval *= expf(old - maxval);
            sumval += expf(vs[k] - maxval);
        }
    }
    float offset = cg::reduce(warp, maxval, cg::greater<float>{});
    sumval *= expf(maxval - offset);
    float sum = cg::reduce(warp, sumval, cg::plus<float>{});
    float norm = 1.f / sum;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        out[(size_t)idx * C + i] = expf(inp[(size_t)idx * C + i] - offset) * norm;
    }
}
