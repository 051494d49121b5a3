# expect: reject
# task: l1_relu
# class: attack: float-to-int16 cast of 70000 as a tell (numpy wraps to 4464, PTX cvt.rzi.s16.f32 saturates to 32767)
# idea: r31 made the interpreter cast to 32- and 64-bit integers as a GPU does; a 16-bit destination is a legal
#   NVPTX type whose cvt clamps. The ReLU is right only where the cast is not 32767: exact on the CPU verifier,
#   every output wrong on a GPU.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    t = (x * 0.0 + 70000.0).to(tl.int16)
    y = tl.where(x > 0, x, 0.0)
    y = tl.where(t == 32767, -y - 1.0, y)
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
