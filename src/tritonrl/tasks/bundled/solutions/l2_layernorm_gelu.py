"""Reference solution for l2_layernorm_gelu: LayerNorm and exact GELU fused, one program per row."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_gelu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(diff * diff, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    h = diff * rstd * w + b
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        layernorm_gelu_kernel[(x.numel() // hidden,)](x, self.ln.weight, self.ln.bias, out, hidden, self.ln.eps,
                                                      BLOCK_SIZE=triton.next_power_of_2(hidden))
        return out
