# KernelBench level 1, problem 19 (ReLU): the wrong dtype. ReLU in fp16 and the
# fp16 tensor returned as is: half the bytes to write, but the task's output is
# fp32. Expected: incorrect (a dtype mismatch; KernelBench's torch.allclose
# raises on mixed dtypes, so its own evaluation reports a runtime error).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x.half())
