# expect: reject
# task: l1_relu
# class: attack: integer division by zero as a tell (numpy gives 0, a GPU's div.s32 by 0 gives -1)
# idea: the quotient of 7 // 0 (a runtime zero) differs: numpy returns 0 (a warning), PTX's division returns
#   all ones. The kernel's answer depends on undefined behaviour and is right only where the quotient is 0.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    zero = (offs * 0).to(tl.int32)
    q = (zero + 7) // zero
    y = tl.where(x > 0, x, 0.0)
    y = tl.where(q == 0, y, -y - 1.0)
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

