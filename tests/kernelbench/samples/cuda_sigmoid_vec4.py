# KernelBench level 1, problem 21 (Sigmoid): load_inline CUDA with float4 loads
# and stores when the pointers are 16-byte aligned, a scalar tail, and a scalar
# path otherwise. Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sigmoid_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cstdint>

__device__ __forceinline__ float sigmoidf(float v) {
    return 1.0f / (1.0f + expf(-v));
}

__global__ void sigmoid_vec4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = x[i];
        v.x = sigmoidf(v.x);
        v.y = sigmoidf(v.y);
        v.z = sigmoidf(v.z);
        v.w = sigmoidf(v.w);
        y[i] = v;
    }
}

__global__ void sigmoid_scalar_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t begin, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = begin + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = sigmoidf(x[i]);
}

static unsigned grid_for(int64_t work, int threads) {
    int64_t blocks = (work + threads - 1) / threads;
    if (blocks < 1)
        blocks = 1;
    if (blocks > 1048576)
        blocks = 1048576;
    return (unsigned)blocks;
}

torch::Tensor sigmoid_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "sigmoid_forward: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sigmoid_forward: x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0)
        return y;
    const float* xp = xc.data_ptr<float>();
    float* yp = y.data_ptr<float>();
    auto stream = at::cuda::getCurrentCUDAStream();
    const int threads = 256;
    int64_t done = 0;
    if (((reinterpret_cast<uintptr_t>(xp) | reinterpret_cast<uintptr_t>(yp)) & 15) == 0) {
        const int64_t n4 = n / 4;
        if (n4 > 0) {
            sigmoid_vec4_kernel<<<grid_for(n4, threads), threads, 0, stream>>>(
                reinterpret_cast<const float4*>(xp), reinterpret_cast<float4*>(yp), n4);
            C10_CUDA_KERNEL_LAUNCH_CHECK();
        }
        done = n4 * 4;
    }
    if (done < n) {
        sigmoid_scalar_kernel<<<grid_for(n - done, threads), threads, 0, stream>>>(xp, yp, done, n);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return y;
}
"""

sigmoid_cpp_source = "torch::Tensor sigmoid_forward(torch::Tensor x);"

sigmoid_ext = load_inline(
    name="kb_sample_cuda_sigmoid_vec4",
    cpp_sources=sigmoid_cpp_source,
    cuda_sources=sigmoid_cuda_source,
    functions=["sigmoid_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return sigmoid_ext.sigmoid_forward(x)
