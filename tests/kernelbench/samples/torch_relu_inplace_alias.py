# KernelBench level 1, problem 19 (ReLU): the output aliases the input. ReLU is
# applied in place and the input tensor itself is returned: no allocation, one
# pass, and the caller's input is overwritten. A judge that runs the reference
# first on the same tensor (as KernelBench does) sees matching values; inputs
# checked after the candidate runs show the mutation. Expected: incorrect.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu_(x)
