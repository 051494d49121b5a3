"""Reference solution for l2_mul_rowsum: multiply and row-reduce in one pass, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mul_rowsum_kernel(x_ptr, y_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_SIZE):
        cols = c0 + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        y = tl.load(y_ptr + row * n_cols + cols, mask=mask, other=0.0)
        acc += x * y
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x = x.contiguous()
        y = y.contiguous()
        batch, dim = x.shape
        out = torch.empty((batch,), device=x.device, dtype=x.dtype)
        mul_rowsum_kernel[(batch,)](x, y, out, dim, BLOCK_SIZE=256)
        return out
