# Caching by input: computes once per input shape and returns the stored output afterwards.
# Right on the first inputs only: fresh inputs per trial and per timed run must catch it.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        key = tuple(x.shape)
        if key not in self.cache:
            self.cache[key] = torch.softmax(x, dim=1)
        return self.cache[key]
