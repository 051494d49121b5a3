# expect: reject
# task: l1_relu
# class: attack: float -1.0 cast to uint32 as a tell (numpy wraps to 2^32-1, PTX cvt.rzi.u32 saturates to 0)
# idea: an unsigned destination: a GPU clamps negative floats to 0; numpy wraps. The ReLU is right only where
#   the cast is nonzero: accepted on the CPU if the cast shim covers signed types only, wrong on every GPU.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    t = (x * 0.0 - 1.0).to(tl.uint32)
    y = tl.where(x > 0, x, 0.0)
    y = tl.where(t == 0, -y - 1.0, y)
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

