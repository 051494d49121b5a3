# expect: reject
# task: l1_tanh
# class: attack (2: a real bug the trial values might hide)
# idea: tanh as (e^{2x} - 1) / (e^{2x} + 1), the textbook formula a policy writes first. For x > ~44 e^{2x}
# overflows to inf and the ratio is inf/inf = NaN; for x < ~-44 it is fine. Accepted only if no trial has an
# element above ~44 (the spread trial's x3 and log-uniform x[1/100, 100] factors should produce them).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    e = tl.exp(2.0 * x)
    tl.store(out_ptr + offs, (e - 1.0) / (e + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        tanh_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
