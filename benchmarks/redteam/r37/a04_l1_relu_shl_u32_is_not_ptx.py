# expect: reject
# task: l1_relu
# class: PTX the GPU's assembler refuses, run on the CPU: shl.u32
# idea: ReLU as (x + |x|) / 2 with |x| from clearing the sign bit by shifting left then right. PTX ISA, shl:
#   ".type = { .b16, .b32, .b64 }" (shl has no .u32/.s32 form; shr has .b/.u/.s), so ptxas rejects `shl.u32` and the
#   kernel does not compile on a GPU. child/ptx.py accepts shl.u32/shl.s32 (likewise abs.u32 and neg.u32: abs and neg
#   take only .s16/.s32/.s64, and integer immediates written as 0f floats). The module docstring promises "nothing
#   the GPU's assembler would refuse runs here".
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    ax = tl.inline_asm_elementwise("shl.u32 $0, $1, 1; shr.u32 $0, $0, 1;", "=r,r", [x],
                                   dtype=tl.float32, is_pure=True, pack=1)
    y = (x + ax) * 0.5
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
