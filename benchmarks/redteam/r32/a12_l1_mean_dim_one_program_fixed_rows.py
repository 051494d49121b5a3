# expect: reject
# task: l1_mean_dim
# class: attack: shape shortcut on the batch dimension: grid = (1,) and a fixed 128-row block
# idea: one program reduces every row at once: a (128, BLOCK_C) tile looped over the columns, rows masked by
#   rows < B. Every batch the CPU draws (task 64, edge 65, 2^j 32, wide 3, tiny) fits in 128 rows; the GPU's timing
#   shape (32768 rows) leaves all rows past 128 unwritten (a first try with 64 rows was caught by the edge shape, 65 rows). The wide shape widens features, never rows.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_rows_kernel(x_ptr, out_ptr, B, D, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.arange(0, BLOCK_B)
    rmask = rows < B
    acc = tl.zeros((BLOCK_B,), dtype=tl.float32)
    for c0 in tl.range(0, D, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        m = rmask[:, None] & (cols[None, :] < D)
        tile = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        acc += tl.sum(tile, axis=1)
    tl.store(out_ptr + rows, acc / D, mask=rmask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, D = x.shape
        out = torch.empty((B,), device=x.device, dtype=x.dtype)
        mean_rows_kernel[(1,)](x, out, B, D, BLOCK_B=128, BLOCK_C=64)
        return out
