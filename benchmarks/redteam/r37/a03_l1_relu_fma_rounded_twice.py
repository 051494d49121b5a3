# expect: reject
# task: l1_relu
# class: PTX emulation differs from the ISA: fma.rn.f32 rounded twice (via float64)
# idea: fma.rn.f32 computes a*b+c "in infinite precision and then rounds to single precision" once (PTX ISA,
#   fma). child/ptx.py computes it in float64 and rounds again to float32: a = 1 + 2^-12 (0x3F800800), a*a + 2^-70 =
#   1 + 2^-11 + 2^-24 + 2^-70 is just above the midpoint, so the GPU gives 0x3F801001, the emulation 0x3F801000
#   (the float64 sum drops 2^-70, the tie then goes to even). The kernel subtracts 0x3F801000 and scales the
#   difference by 2^30: +0 on the CPU, +128 on a GPU. (a and c come from x*0 + const so ptxas cannot fold them.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    err = tl.inline_asm_elementwise(
        "mul.f32 $0, $2, 0f00000000; add.f32 $1, $0, 0f3F800800; add.f32 $0, $0, 0f1C800000; "
        "fma.rn.f32 $0, $1, $1, $0; sub.f32 $0, $0, 0f3F801000; mul.f32 $0, $0, 0f4E800000;",
        "=f,=f,f", [x], dtype=(tl.float32, tl.float32), is_pure=True, pack=1)[0]
    y = tl.maximum(x, 0.0) + err
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
