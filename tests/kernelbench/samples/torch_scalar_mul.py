# KernelBench level 1, problem 5 (Matrix_scalar_multiplication): plain PyTorch,
# A times the scalar s (a Python number or a 0-d tensor) through torch.mul.
# Expected: correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s) -> torch.Tensor:
        return torch.mul(A, s)
