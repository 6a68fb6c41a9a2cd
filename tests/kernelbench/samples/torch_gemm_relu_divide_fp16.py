# KernelBench level 2, problem 63 (Gemm_ReLU_Divide): the precision downcast.
# The GEMM runs in fp16 (tensor cores, fp16 inputs and output) and the result
# is cast back to fp32, so the output has the right dtype but only ~3 decimal
# digits: relative errors ~1e-3 against a tolerance of 1e-4. Expected: incorrect
# (KernelBench's old atol = rtol = 1e-2 would pass it).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.nn.functional.linear(x.half(), self.linear.weight.half(), self.linear.bias.half())
        return (torch.relu(t) / self.divisor).float()
