# KernelBench level 1, problem 23 (Softmax over dim 1 of [batch_size, dim]):
# load_inline CUDA, one block per row, three passes over the row (maximum,
# sum of exponentials, write), block reductions through warp shuffles.
# Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

softmax_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cmath>

#define SOFTMAX_THREADS 256

__device__ float block_max(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (SOFTMAX_THREADS / 32) ? sh[lane] : -INFINITY;
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (lane == 0)
            sh[32] = v;
    }
    __syncthreads();
    const float r = sh[32];
    __syncthreads();
    return r;
}

__device__ float block_sum(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (SOFTMAX_THREADS / 32) ? sh[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0)
            sh[32] = v;
    }
    __syncthreads();
    const float r = sh[32];
    __syncthreads();
    return r;
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t D) {
    __shared__ float sh[33];
    const float* xr = x + (int64_t)blockIdx.x * D;
    float* yr = y + (int64_t)blockIdx.x * D;
    float m = -INFINITY;
    for (int64_t i = threadIdx.x; i < D; i += SOFTMAX_THREADS)
        m = fmaxf(m, xr[i]);
    m = block_max(m, sh);
    float s = 0.0f;
    for (int64_t i = threadIdx.x; i < D; i += SOFTMAX_THREADS)
        s += expf(xr[i] - m);
    s = block_sum(s, sh);
    const float inv = 1.0f / s;
    for (int64_t i = threadIdx.x; i < D; i += SOFTMAX_THREADS)
        yr[i] = expf(xr[i] - m) * inv;
}

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "softmax_forward: x must be a CUDA tensor");
    TORCH_CHECK(x.dim() == 2, "softmax_forward: x must be 2-D");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "softmax_forward: x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t rows = xc.size(0), D = xc.size(1);
    if (rows == 0 || D == 0)
        return y;
    softmax_rows_kernel<<<(unsigned)rows, SOFTMAX_THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), D);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

softmax_cpp_source = "torch::Tensor softmax_forward(torch::Tensor x);"

softmax_ext = load_inline(
    name="kb_sample_cuda_softmax",
    cpp_sources=softmax_cpp_source,
    cuda_sources=softmax_cuda_source,
    functions=["softmax_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax_ext.softmax_forward(x)
