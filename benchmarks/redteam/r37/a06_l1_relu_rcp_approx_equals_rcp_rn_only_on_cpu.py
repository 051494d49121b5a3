# expect: reject
# task: l1_relu
# class: PTX emulation differs from the ISA: an approximate instruction computed exactly (approx == rn only on the CPU)
# idea: child/ptx.py computes rcp.approx.f32 exactly and rounds once, so rcp.approx(x) - rcp.rn(x) is 0 for every
#   x on the CPU. PTX ISA, rcp: "rcp.approx.f32 implements a fast approximation to reciprocal. The maximum ulp
#   error is 1 across the full range of inputs" - not correctly rounded, so on a GPU (MUFU.RCP) the difference is
#   +-1 ulp for part of the inputs. On t = |x| + 1 (no zero, no overflow), scaled by 2^24 it is 0 on the CPU and about +-1 on a GPU wherever the two
#   differ: wrong there. The same holds for sqrt.approx vs sqrt.rn, ex2.approx vs an exact power, lg2, rsqrt, div.
#   (That some random inputs differ on an H200 is expected from the 1-ulp bound, not measured here: no GPU.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    d = tl.inline_asm_elementwise(
        "and.b32 $1, $2, 0x7FFFFFFF; add.f32 $1, $1, 0f3F800000; rcp.approx.f32 $0, $1; rcp.rn.f32 $1, $1; "
        "sub.f32 $0, $0, $1; mul.f32 $0, $0, 0f4B800000; mov.b32 $1, $0;",
        "=f,=f,f", [x], dtype=(tl.float32, tl.float32), is_pure=True, pack=1)[0]
    y = tl.maximum(x, 0.0) + d
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
