# expect: done
# task: l1_relu
# class: honest valid PTX the CPU emulation crashes on: an octal immediate
# idea: ReLU on the bits: the sign mask by an arithmetic shift of 31 bits, written 037 (PTX integer literals follow C:
#   0[0-7]+ is octal, so 037 is 31; PTX ISA, "Constants"). shr.s32 $0, $1, 037; not.b32; and.b32 with x. Valid on a
#   GPU. child/ptx.py parses integer immediates with int(text, 0), which raises ValueError on a leading zero.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.inline_asm_elementwise("shr.s32 $0, $1, 037; not.b32 $0, $0; and.b32 $0, $0, $1;", "=r,r", [x],
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
