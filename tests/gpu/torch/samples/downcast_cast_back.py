# Precision downcast hidden by a cast back to float32: the tolerance (1e-4) must catch it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.half(), dim=1).float()
