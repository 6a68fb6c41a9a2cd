# KernelBench level 1, problem 23 (Softmax over dim 1 of [batch_size, dim]):
# a Triton kernel, one program per row, three passes over the row in blocks of
# 1024 (row maximum, sum of exponentials, write), so any row length works.
# Expected: correct.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
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
    s = tl.sum(s_acc, axis=0)

    for start in range(0, n_cols, BLOCK_SIZE):
        idx = start + cols
        mask = idx < n_cols
        v = tl.load(x_row + idx, mask=mask, other=float("-inf"))
        tl.store(y_row + idx, tl.exp(v - m) / s, mask=mask)


def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "softmax over dim 1 of a 2-D tensor"
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        return y
    softmax_kernel[(rows,)](x, y, cols, BLOCK_SIZE=1024, num_warps=8)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_softmax(x)
