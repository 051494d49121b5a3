# expect: done
# task: l1_relu
# class: honest valid PTX rejected: a tab between opcode and operands
# idea: ReLU as max.f32 written the way PTX listings (and LLVM's output) lay instructions out: "max.f32\t$0, $1,
#   0f00000000;". Whitespace between opcode and operands is any blank in PTX; child/ptx.py splits on a space only.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.inline_asm_elementwise("max.f32\t$0, $1, 0f00000000;", "=r,r", [x],
                                  dtype=tl.float32, is_pure=True, pack=1)
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
