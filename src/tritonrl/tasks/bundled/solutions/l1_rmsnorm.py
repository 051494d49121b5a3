"""Reference solution for l1_rmsnorm: one program per row; the weight comes from the same nn.RMSNorm."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * rstd * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        n_rows = x.numel() // hidden
        rmsnorm_kernel[(n_rows,)](x, self.norm.weight, out, hidden, self.norm.eps,
                                  BLOCK_SIZE=triton.next_power_of_2(hidden))
        return out
