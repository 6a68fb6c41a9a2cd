# KernelBench level 2, problem 1 (Conv2D_ReLU_BiasAdd): the convolution stays
# with cuDNN (nn.Conv2d, created first as in the Model, then the torch.randn
# bias of shape (out_channels, 1, 1)); ReLU and the per-channel bias add are
# fused into one load_inline CUDA kernel over the NCHW output, in place.
# Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

epilogue_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_bias_nchw_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                      int64_t total, int64_t C, int64_t HW) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t c = (i / HW) % C;
        const float v = y[i];
        y[i] = (v > 0.0f ? v : 0.0f) + bias[c];
    }
}

torch::Tensor relu_bias_inplace(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "relu_bias_inplace: CUDA tensors expected");
    TORCH_CHECK(y.dim() == 4 && y.is_contiguous(), "relu_bias_inplace: y must be contiguous NCHW");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "relu_bias_inplace: float32 expected");
    auto b = bias.contiguous();
    const int64_t C = y.size(1), HW = y.size(2) * y.size(3);
    TORCH_CHECK(b.numel() == C, "relu_bias_inplace: one bias per channel expected");
    const int64_t total = y.numel();
    if (total == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    relu_bias_nchw_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), total, C, HW);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

epilogue_cpp_source = "torch::Tensor relu_bias_inplace(torch::Tensor y, torch::Tensor bias);"

epilogue_ext = load_inline(
    name="kb_sample_cuda_conv_relu_bias",
    cpp_sources=epilogue_cpp_source,
    cuda_sources=epilogue_cuda_source,
    functions=["relu_bias_inplace"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).contiguous()
        return epilogue_ext.relu_bias_inplace(y, self.bias)
