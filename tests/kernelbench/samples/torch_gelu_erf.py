# KernelBench level 1, problem 26 (GELU): plain PyTorch, the exact GELU written
# out with torch ops, 0.5 * x * (1 + erf(x / sqrt(2))), which is what
# torch.nn.functional.gelu computes by default. Expected: correct.
import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
