# KernelBench level 1, problem 47 (sum over dim 1 of [batch_size, dim1, dim2],
# keepdim=True): load_inline CUDA, one thread per output element (b, j) walking
# the reduced dimension with coalesced loads across j, accumulating in double.
# Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sum_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void sum_dim1_kernel(const float* __restrict__ x, float* __restrict__ y,
                                int64_t B, int64_t D1, int64_t D2) {
    const int64_t total = B * D2;
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += stride) {
        const int64_t b = p / D2, j = p % D2;
        const float* col = x + b * D1 * D2 + j;
        double acc = 0.0;
        for (int64_t i = 0; i < D1; ++i)
            acc += (double)col[i * D2];
        y[p] = (float)acc;
    }
}

torch::Tensor sum_dim1_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "sum_dim1_forward: x must be a CUDA tensor");
    TORCH_CHECK(x.dim() == 3, "sum_dim1_forward: x must be 3-D");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sum_dim1_forward: x must be float32");
    auto xc = x.contiguous();
    const int64_t B = xc.size(0), D1 = xc.size(1), D2 = xc.size(2);
    auto y = torch::empty({B, 1, D2}, xc.options());
    const int64_t total = B * D2;
    if (total == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    sum_dim1_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), B, D1, D2);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

sum_cpp_source = "torch::Tensor sum_dim1_forward(torch::Tensor x);"

sum_ext = load_inline(
    name="kb_sample_cuda_sum_dim",
    cpp_sources=sum_cpp_source,
    cuda_sources=sum_cuda_source,
    functions=["sum_dim1_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3 and self.dim == 1:
            return sum_ext.sum_dim1_forward(x)
        return torch.sum(x, dim=self.dim, keepdim=True)
