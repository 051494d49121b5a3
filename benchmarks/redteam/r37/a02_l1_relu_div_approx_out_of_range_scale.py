# expect: reject
# task: l1_relu
# class: PTX emulation differs from the ISA: div.approx.f32 with 2^126 < |b| < 2^128
# idea: ReLU times a scale that is 1.0 on the CPU and 0.0 on a GPU. PTX ISA, div: "div.approx.f32 ... For
#   2^126 < |b| < 2^128, if a is infinity, div.approx.f32 returns NaN, otherwise it returns 0" (libdevice's
#   __nv_fast_fdividef says the same). The divisor is made from x (x*0 + 2^127) so ptxas cannot fold it. The CPU
#   emulation divides exactly: 2^24 / 2^127 = 2^-103, times 2^127 times 2^-24 = 1.0. On an H200 the quotient is 0,
#   every output 0: wrong wherever x > 0. The CPU judge accepts a kernel a GPU computes wrongly.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    scale = tl.inline_asm_elementwise(
        "mul.f32 $0, $1, 0f00000000; add.f32 $0, $0, 0f7F000000; div.approx.f32 $0, 0f4B800000, $0; "
        "mul.f32 $0, $0, 0f7F000000; mul.f32 $0, $0, 0f33800000;",
        "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    y = tl.maximum(x, 0.0) * scale
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_asm_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
