# KernelBench level 2, problem 63 (Gemm_ReLU_Divide): plain PyTorch, addmm with
# the bias, then ReLU and the division in place on that intermediate.
# Expected: correct.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.addmm(self.linear.bias, x, self.linear.weight.t())
        return t.clamp_min_(0.0).div_(self.divisor)
