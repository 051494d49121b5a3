"""Reference solution for l1_max_dim: one program per row of the flattened (batch * dim1, dim2) view."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.empty((batch, dim1), device=x.device, dtype=x.dtype)
        BLOCK_SIZE = triton.next_power_of_2(dim2)
        row_max_kernel[(batch * dim1,)](x, out, dim2, BLOCK_SIZE=BLOCK_SIZE)
        return out
