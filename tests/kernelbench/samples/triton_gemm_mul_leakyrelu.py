# KernelBench level 2, problem 12 (Gemm_Multiply_LeakyReLU): nn.Linear keeps
# the GEMM (cuBLAS, fp32), a Triton kernel fuses the multiply and the
# LeakyReLU, writing a new tensor. (A Triton tl.dot GEMM would run in TF32 by
# default, too coarse for an fp32 tolerance of 1e-4.) Expected: correct.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_leaky_relu_kernel(t_ptr, y_ptr, n_elements, multiplier, negative_slope, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0).to(tl.int64)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    v = tl.load(t_ptr + offsets, mask=mask, other=0.0) * multiplier
    tl.store(y_ptr + offsets, tl.where(v > 0, v, v * negative_slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = float(multiplier)
        self.negative_slope = float(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.gemm(x).contiguous()
        y = torch.empty_like(t)
        n = t.numel()
        if n == 0:
            return y
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        mul_leaky_relu_kernel[grid](t, y, n, self.multiplier, self.negative_slope, BLOCK_SIZE=BLOCK_SIZE)
        return y
