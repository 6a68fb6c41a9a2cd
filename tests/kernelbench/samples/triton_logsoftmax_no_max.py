# KernelBench level 1, problem 24 (LogSoftmax over dim 1): a Triton kernel with
# a wrong formula. It subtracts the row maximum m inside the exponentials (so
# the sum is finite) but forgets to subtract it from the result:
# y = x - log(sum exp(x - m)) instead of x - m - log(sum exp(x - m)), so every
# output is off by the row maximum. Expected: incorrect.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(axis=0).to(tl.int64)
    x_row = x_ptr + row * n_cols
    y_row = y_ptr + row * n_cols
    cols = tl.arange(0, BLOCK_SIZE)

    m_acc = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + cols
        v = tl.load(x_row + idx, mask=idx < n_cols, other=float("-inf"))
        m_acc = tl.maximum(m_acc, v)
    m = tl.max(m_acc, axis=0)

    s_acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + cols
        v = tl.load(x_row + idx, mask=idx < n_cols, other=float("-inf"))
        s_acc += tl.exp(v - m)
    log_s = tl.log(tl.sum(s_acc, axis=0))

    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + cols
        mask = idx < n_cols
        v = tl.load(x_row + idx, mask=mask, other=0.0)
        tl.store(y_row + idx, v - log_s, mask=mask)  # wrong: the "- m" is missing


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        log_softmax_kernel[(rows,)](x, y, cols, BLOCK_SIZE=1024, num_warps=8)
        return y
