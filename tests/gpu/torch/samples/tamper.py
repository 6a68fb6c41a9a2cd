# Replaces torch.cuda.Event.elapsed_time to report tiny times: the judge must reject it.
import torch
import torch.nn as nn

torch.cuda.Event.elapsed_time = lambda self, end: 1e-3


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)
