# KernelBench level 1, problem 47 (sum over dim 1, keepdim=True): plain PyTorch
# that drops keepdim, so the output is [batch_size, dim2] instead of
# [batch_size, 1, dim2]; the values are right. Expected: incorrect (a shape
# mismatch).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)
