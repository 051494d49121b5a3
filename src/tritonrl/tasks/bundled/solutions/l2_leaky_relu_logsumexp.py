"""Reference solution for l2_leaky_relu_logsumexp: LeakyReLU and a stable logsumexp, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_logsumexp_kernel(x_ptr, out_ptr, n_cols, negative_slope, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    h = tl.where(x >= 0, x, x * negative_slope)
    h = tl.where(mask, h, -float("inf"))
    m = tl.max(h, axis=0)
    tl.store(out_ptr + row, m + tl.log(tl.sum(tl.exp(h - m), axis=0)))


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty((batch, 1), device=x.device, dtype=x.dtype)
        leaky_relu_logsumexp_kernel[(batch,)](x, out, dim, self.negative_slope,
                                              BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
