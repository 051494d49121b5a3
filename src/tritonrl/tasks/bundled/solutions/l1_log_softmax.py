"""Reference solution for l1_log_softmax: x - max - log(sum(exp(x - max))), one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    log_norm = tl.log(tl.sum(tl.exp(shifted), axis=0))
    tl.store(out_ptr + row * n_cols + cols, shifted - log_norm, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        log_softmax_kernel[(batch,)](x, out, dim, BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
