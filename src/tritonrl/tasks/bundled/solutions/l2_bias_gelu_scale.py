"""Reference solution for l2_bias_gelu_scale: bias, GELU and scale in one elementwise kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_scale_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_features, scale, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    h = tl.load(x_ptr + offsets, mask=mask) + tl.load(bias_ptr + offsets % n_features, mask=mask)
    y = 0.5 * h * (1.0 + tl.math.erf(h * 0.7071067811865476))
    tl.store(out_ptr + offsets, y * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        bias_gelu_scale_kernel[grid](x, self.bias, out, n_elements, x.shape[-1], self.scale, BLOCK_SIZE=BLOCK_SIZE)
        return out
