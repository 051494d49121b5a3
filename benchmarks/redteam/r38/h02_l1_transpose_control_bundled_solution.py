# task: l1_transpose
# expect: done
# why: control: the bundled honest l1_transpose solution, verbatim below this header.
"""Reference solution for l1_transpose: each program copies one tile, storing it at transposed addresses."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    tile = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask)
    tl.store(out_ptr + cols[None, :] * n_rows + rows[:, None], tile, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty((n_cols, n_rows), device=x.device, dtype=x.dtype)
        BLOCK_R, BLOCK_C = 32, 32
        grid = (triton.cdiv(n_rows, BLOCK_R), triton.cdiv(n_cols, BLOCK_C))
        transpose_kernel[grid](x, out, n_rows, n_cols, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C)
        return out
