# KernelBench level 2, problem 9 (Matmul_Subtract_Multiply_ReLU): nn.Linear
# (cuBLAS, with its bias) and one load_inline CUDA kernel for
# relu((t - subtract_value) * multiply_value), in place on the GEMM's output.
# Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

epilogue_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sub_mul_relu_kernel(float* __restrict__ y, int64_t n, float sub, float mul) {
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float v = (y[i] - sub) * mul;
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

torch::Tensor sub_mul_relu_inplace(torch::Tensor y, double sub, double mul) {
    TORCH_CHECK(y.is_cuda(), "sub_mul_relu_inplace: y must be a CUDA tensor");
    TORCH_CHECK(y.is_contiguous(), "sub_mul_relu_inplace: y must be contiguous");
    TORCH_CHECK(y.scalar_type() == torch::kFloat32, "sub_mul_relu_inplace: y must be float32");
    const int64_t n = y.numel();
    if (n == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    sub_mul_relu_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), n, (float)sub, (float)mul);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

epilogue_cpp_source = "torch::Tensor sub_mul_relu_inplace(torch::Tensor y, double sub, double mul);"

epilogue_ext = load_inline(
    name="kb_sample_cuda_linear_sub_mul_relu",
    cpp_sources=epilogue_cpp_source,
    cuda_sources=epilogue_cuda_source,
    functions=["sub_mul_relu_inplace"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x).contiguous()
        return epilogue_ext.sub_mul_relu_inplace(y, float(self.subtract_value), float(self.multiply_value))
