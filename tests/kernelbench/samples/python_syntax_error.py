# KernelBench level 1, problem 19 (ReLU): the file is not valid Python (a
# missing colon after the def), so importing it fails before any CUDA is
# built. Expected: compile_error (the build stage cannot import it).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor
        return torch.relu(x)
