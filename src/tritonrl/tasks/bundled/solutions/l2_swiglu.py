"""Reference solution for l2_swiglu: one elementwise kernel over the (tokens, hidden) output.

Output element (t, j) reads a = x[t, j] and b = x[t, hidden + j] from the (tokens, 2 * hidden) input.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swiglu_kernel(x_ptr, out_ptr, n_elements, hidden, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    token = offsets // hidden
    j = offsets % hidden
    a = tl.load(x_ptr + token * 2 * hidden + j, mask=mask)
    b = tl.load(x_ptr + token * 2 * hidden + hidden + j, mask=mask)
    tl.store(out_ptr + offsets, a / (1.0 + tl.exp(-a)) * b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1] // 2
        out = torch.empty((*x.shape[:-1], hidden), device=x.device, dtype=x.dtype)
        n_elements = out.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        swiglu_kernel[grid](x, out, n_elements, hidden, BLOCK_SIZE=BLOCK_SIZE)
        return out
