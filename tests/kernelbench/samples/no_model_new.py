# KernelBench level 1, problem 19 (ReLU): a correct module under the wrong
# name (OptimizedModel), so the file defines no ModelNew class at all.
# Expected: rejected (the submission's own fault, found before anything runs).
import torch
import torch.nn as nn


class OptimizedModel(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
