# expect: done
# task: l1_relu
# class: honest: (h10 over a torch.zeros output) ReLU whose results are written with a float32 tl.atomic_xchg (each lane its own address)
# idea: atomic_xchg on fp32 pointers is GPU-valid (atom.exch.b32); every address is written once, so no race.
#   A probe of a09's "Unsupported data type": an honest kernel using a float exchange (a flag or a slot update
#   in float) should not fail on the CPU judge.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.atomic_xchg(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.zeros_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
