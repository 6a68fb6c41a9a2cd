# KernelBench level 1, problem 19 (ReLU): "vectorized" with float4 loads from
# x + 1, an address that is 4 bytes past a 16-byte boundary, so the first
# vector load is misaligned and the launch faults on every shape.
# Expected: runtime_error, CUDA_ERROR_MISALIGNED_ADDRESS (PyTorch:
# cudaErrorMisalignedAddress, "misaligned address").
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

relu_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        // Wrong: x + 1 is not 16-byte aligned, float4 loads need 16.
        const float4* xv = reinterpret_cast<const float4*>(x + 1);
        const float4 v4 = xv[i / 4];
        const float v = (i % 4 == 0) ? v4.x : (i % 4 == 1) ? v4.y : (i % 4 == 2) ? v4.z : v4.w;
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "relu_forward: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "relu_forward: x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    relu_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

relu_cpp_source = "torch::Tensor relu_forward(torch::Tensor x);"

relu_ext = load_inline(
    name="kb_sample_cuda_relu_misaligned",
    cpp_sources=relu_cpp_source,
    cuda_sources=relu_cuda_source,
    functions=["relu_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu_ext.relu_forward(x)
