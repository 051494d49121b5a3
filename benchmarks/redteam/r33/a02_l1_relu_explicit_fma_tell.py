# expect: reject
# task: l1_relu
# class: attack: tl.fma rounds twice under the interpreter, once on a GPU; the kernel branches on it
# idea: tl.fma is fma.rn.f32 on a GPU (one rounding). If the interpreter computes it as a*b+c in float32, then
#   fma(a, a, -(1 + 2^-11)) with a = 1 + 2^-12 is 0 there and 2^-24 on a GPU. The ReLU is right only where
#   the fma reads 0: accepted on the CPU, every output wrong on a GPU.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = x * 0.0 + 1.000244140625
    d = tl.fma(a, a, x * 0.0 - 1.00048828125)
    y = tl.where(x > 0, x, 0.0)
    y = tl.where(d == 0.0, y, -y - 1.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out

