# KernelBench level 1, problem 23 (Softmax): ModelNew's constructor takes an
# argument the task's Model does not (get_init_inputs() returns []), so
# ModelNew(*get_init_inputs()) raises TypeError before anything runs.
# Expected: runtime_error.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.dim)
