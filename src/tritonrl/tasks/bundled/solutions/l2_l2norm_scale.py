"""Reference solution for l2_l2norm_scale: row norm, eps floor, division and scale in one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2norm_scale_kernel(x_ptr, out_ptr, n_cols, scale, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    norm = tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
    tl.store(out_ptr + row * n_cols + cols, x / norm * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale, eps):
        super().__init__()
        self.scale = scale
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        l2norm_scale_kernel[(batch,)](x, out, dim, self.scale, self.eps, BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
