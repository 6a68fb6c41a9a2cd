# KernelBench level 2, problem 76 (Gemm_Add_ReLU): the GEMM stays with cuBLAS
# (torch.matmul, fp32, TF32 off as PyTorch's default), the bias add and ReLU
# are fused into one load_inline CUDA kernel run in place on the GEMM's output.
# The parameters are created in the Model's order (an nn.Linear without bias,
# then a torch.randn bias), so the same seed gives the same weights.
# Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

epilogue_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, int64_t total, int64_t N) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const float v = y[i] + bias[i % N];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor bias_relu_inplace(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "bias_relu_inplace: CUDA tensors expected");
    TORCH_CHECK(y.is_contiguous(), "bias_relu_inplace: y must be contiguous");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32 && bias.scalar_type() == torch::kFloat32,
                "bias_relu_inplace: float32 expected");
    auto b = bias.contiguous();
    const int64_t N = b.numel();
    const int64_t total = y.numel();
    TORCH_CHECK(N > 0 && total % N == 0, "bias_relu_inplace: bias does not match the last dimension");
    if (total == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    bias_relu_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), total, N);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

epilogue_cpp_source = "torch::Tensor bias_relu_inplace(torch::Tensor y, torch::Tensor bias);"

epilogue_ext = load_inline(
    name="kb_sample_cuda_gemm_add_relu",
    cpp_sources=epilogue_cpp_source,
    cuda_sources=epilogue_cuda_source,
    functions=["bias_relu_inplace"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.gemm.weight.t()).contiguous()
        return epilogue_ext.bias_relu_inplace(y, self.bias)
