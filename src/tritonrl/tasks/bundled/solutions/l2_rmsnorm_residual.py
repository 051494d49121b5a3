"""Reference solution for l2_rmsnorm_residual: residual add and RMSNorm fused, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_rmsnorm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    offsets = row * n_cols + cols
    h = tl.load(x_ptr + offsets, mask=mask, other=0.0) + tl.load(r_ptr + offsets, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + offsets, h * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        add_rmsnorm_kernel[(x.numel() // hidden,)](x, residual, self.norm.weight, out, hidden, self.norm.eps,
                                                   BLOCK_SIZE=triton.next_power_of_2(hidden))
        return out
