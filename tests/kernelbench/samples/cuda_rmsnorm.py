# KernelBench level 1, problem 36 (RMSNorm over dim 1 of [batch_size, features,
# dim1, dim2]): load_inline CUDA, one thread per (n, h, w) position, two walks
# over the channels (sum of squares, then the scaled write), loads coalesced
# across positions. Expected: correct.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

rmsnorm_cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void rmsnorm_kernel(const float* __restrict__ x, float* __restrict__ y,
                               int64_t N, int64_t C, int64_t HW, float eps) {
    const int64_t total = N * HW;
    const int64_t stride = (int64_t)blockDim.x * gridDim.x;
    for (int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; p < total; p += stride) {
        const int64_t n = p / HW, s = p % HW;
        const float* xp = x + n * C * HW + s;
        float* yp = y + n * C * HW + s;
        float acc = 0.0f;
        for (int64_t c = 0; c < C; ++c) {
            const float v = xp[c * HW];
            acc += v * v;
        }
        const float rms = sqrtf(acc / (float)C + eps);
        for (int64_t c = 0; c < C; ++c)
            yp[c * HW] = xp[c * HW] / rms;
    }
}

torch::Tensor rmsnorm_forward(torch::Tensor x, double eps) {
    TORCH_CHECK(x.is_cuda(), "rmsnorm_forward: x must be a CUDA tensor");
    TORCH_CHECK(x.dim() >= 2, "rmsnorm_forward: x must have a channel dimension");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "rmsnorm_forward: x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t N = xc.size(0), C = xc.size(1);
    const int64_t HW = C == 0 || N == 0 ? 0 : xc.numel() / (N * C);
    const int64_t total = N * HW;
    if (total == 0 || C == 0)
        return y;
    const int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 1048576)
        blocks = 1048576;
    rmsnorm_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), N, C, HW, (float)eps);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

rmsnorm_cpp_source = "torch::Tensor rmsnorm_forward(torch::Tensor x, double eps);"

rmsnorm_ext = load_inline(
    name="kb_sample_cuda_rmsnorm",
    cpp_sources=rmsnorm_cpp_source,
    cuda_sources=rmsnorm_cuda_source,
    functions=["rmsnorm_forward"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rmsnorm_ext.rmsnorm_forward(x, self.eps)
