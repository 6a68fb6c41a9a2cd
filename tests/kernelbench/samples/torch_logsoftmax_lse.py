# KernelBench level 1, problem 24 (LogSoftmax over dim 1): plain PyTorch,
# x - logsumexp(x) (logsumexp subtracts the maximum itself, so it is stable).
# Expected: correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - torch.logsumexp(x, dim=self.dim, keepdim=True)
