# Writes the answer into its input and returns the input: an output that aliases an input.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.copy_(torch.softmax(x, dim=1))
