# expect: done
# task: l1_gelu
# class: honest exact GELU computed in float64 inside the kernel (libdevice erf on doubles), rounded once to fp32
# idea: fp64 arithmetic is legal on every NVIDIA GPU (slow on consumer parts); the result is at least as accurate as torch's fp32 GELU
import torch
import torch.nn as nn
import triton
import triton.language as tl

from triton.language.extra import libdevice


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y.to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        gelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
