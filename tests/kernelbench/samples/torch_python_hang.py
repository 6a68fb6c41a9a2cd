# KernelBench level 1, problem 22 (Tanh): a forward that never returns (a
# polling loop on the host whose exit condition can never hold). Nothing is
# launched on the GPU; only a wall-clock limit ends it. Expected: timeout.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ready = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while not self._ready:
            pass
        return torch.tanh(x)
