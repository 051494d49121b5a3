"""Reference solution for l2_mean_sub_tanh: row mean, centering and tanh (via exp) in one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_sub_tanh_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    c = x - tl.sum(x, axis=0) / n_cols
    # tanh(|c|) = (1 - e) / (1 + e) with e = exp(-2|c|) <= 1, so nothing overflows.
    e = tl.exp(-2.0 * tl.abs(c))
    t = (1.0 - e) / (1.0 + e)
    tl.store(out_ptr + row * n_cols + cols, tl.where(c >= 0, t, -t), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        mean_sub_tanh_kernel[(batch,)](x, out, dim, BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
