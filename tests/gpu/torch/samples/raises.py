# A ModelNew whose forward raises (a Python exception of the candidate: runtime_error, kind python).
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        raise ValueError("not implemented yet")
