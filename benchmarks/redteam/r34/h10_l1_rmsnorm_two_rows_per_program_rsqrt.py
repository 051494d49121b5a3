# expect: done
# task: l1_rmsnorm
# class: honest RMSNorm, two rows per program as a 2-D tile, libdevice.rsqrt, the row count masked, weight loaded once
# idea: a (2, BLOCK) tile, sum over axis 1, rsqrt of mean square + eps; the second row masked off when the row count is odd
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    ms = tl.sum(x * x, axis=1) / n_cols
    r = libdevice.rsqrt(ms + eps)
    w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + offs, x * r[:, None] * w[None, :], mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=eps)

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        n_rows = x.numel() // hidden
        rmsnorm_kernel[(triton.cdiv(n_rows, 2),)](x, self.norm.weight, out, n_rows, hidden, self.norm.eps,
                                                  ROWS=2, BLOCK=triton.next_power_of_2(hidden))
        return out
