# expect: reject
# task: l1_relu
# class: interpreter tell: float -> uint32 cast of a negative value (GPU clamps to 0, numpy wraps)
# idea: Triton lowers a float to unsigned-integer cast to LLVM fptoui, which NVPTX emits as cvt.rzi.u32.f32;
#   PTX float-to-integer cvt clamps to the destination range (PTX ISA, cvt: "For float-to-integer conversions,
#   the result is clamped to the destination range by default"; documented), so -1.0 -> 0. Triton's stock
#   interpreter gives 4294967295 (numpy wraps; run standalone here). The verifier fixed signed 8/16/32/64-bit
#   casts (docs/verifier.md, r31/r33); whether unsigned ones are covered is what this asks. ReLU only when the
#   cast wrapped: right under a wrapping interpreter, the identity on a GPU.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    u = (x * 0.0 - 1.0).to(tl.uint32)
    wrapped = u > 1000
    y = tl.where(wrapped, tl.where(x > 0, x, 0.0), x)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
