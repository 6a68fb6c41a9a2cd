# Precision downcast hidden by a cast back to float32. Expected correct: the output rounded to half
# (relative error at most 2^-11) stays inside atol 1e-4 wherever a softmax value is below 0.2, which
# random normal rows of 1000 or 8192 elements never reach; only a returned half is caught by the
# dtype rule (downcast.py). Kept to show where the tolerance, not the judge, draws the line.
# (Computing in half instead, softmax(x.half()), rounds the inputs: an element of a row whose values
# reach ~4 then moves by up to ~1e-4, and one of ~100 fresh-input timed runs was a mismatch on the
# H200 host, 2026-11-27: the judge was right.)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1).half().float()
