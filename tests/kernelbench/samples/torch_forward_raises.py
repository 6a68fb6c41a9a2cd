# KernelBench level 1, problem 23 (Softmax): a forward that raises on rows
# longer than 65536 (the author's kernel was "not written yet" for them). The
# task's default shape has rows of 393216, so forward raises there.
# Expected: runtime_error (a Python exception from forward).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] > 65536:
            raise NotImplementedError(f"rows of {x.shape[-1]} elements are not supported yet")
        return torch.softmax(x, dim=1)
