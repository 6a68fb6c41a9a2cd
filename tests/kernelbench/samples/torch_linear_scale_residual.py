# KernelBench level 2, problem 40 (Matmul_Scaling_ResidualAdd): plain PyTorch,
# the algebraic rewrite t * s + t = t * (1 + s), done in place on the GEMM's
# output (an intermediate that ModelNew owns), saving the clone and one pass.
# Expected: correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = self.matmul(x)
        return t.mul_(1.0 + self.scaling_factor)
