# expect: done
# task: l1_add_scale
# class: honest (a + b) * alpha as tl.fma(a, alpha, b * alpha) with tl.assume on the size and eviction/cache hints
# idea: fma rounds once (a*alpha + b*alpha differs from (a+b)*alpha by ~1 ulp, within tolerance); tl.assume(n > 0) is true; hints change no values
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_scale_kernel(a_ptr, b_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    tl.assume(n > 0)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first")
    b = tl.load(b_ptr + offs, mask=mask, other=0.0, cache_modifier=".cg")
    tl.store(out_ptr + offs, tl.fma(a, alpha, b * alpha), mask=mask, cache_modifier=".cs")


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        out = torch.empty_like(a)
        n = a.numel()
        add_scale_kernel[(triton.cdiv(n, 256),)](a, b, out, n, float(self.alpha), BLOCK=256)
        return out
