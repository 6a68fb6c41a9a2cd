# Precision downcast hidden by a cast back to float32. Expected correct: half's relative error (~1e-3)
# on softmax values of ~1e-4 is far inside the task's atol of 1e-4; only a returned half is caught
# by the dtype rule (downcast.py). Kept to show where the tolerance, not the judge, draws the line.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x.half(), dim=1).float()
