"""Reference solution for l1_add_scale: one elementwise kernel over the flattened tensors."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_scale_kernel(a_ptr, b_ptr, out_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    a = tl.load(a_ptr + offsets, mask=mask)
    b = tl.load(b_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (a + b) * alpha, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n_elements = a.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        add_scale_kernel[grid](a, b, out, n_elements, self.alpha, BLOCK_SIZE=BLOCK_SIZE)
        return out
