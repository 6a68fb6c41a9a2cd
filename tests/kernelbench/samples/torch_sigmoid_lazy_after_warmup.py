# KernelBench level 1, problem 21 (Sigmoid): timing-only behaviour. The first
# six calls compute sigmoid honestly; from the seventh on, forward returns the
# previous output without computing anything. KernelBench's evaluation makes 5
# correctness calls and 3 warm-ups and then times 100 calls on the same inputs,
# so it sees a correct and very fast kernel. Fresh inputs for every timed run,
# each checked, must catch it. Expected: incorrect.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._calls = 0
        self._last = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._calls += 1
        if self._calls > 6 and self._last is not None:
            return self._last
        self._last = torch.sigmoid(x)
        return self._last
