# expect: reject
# task: l1_relu
# class: interpreter tell: tl.exp with a subnormal result (the exp2 flush was closed; does tl.exp flush too?)
# idea: The verifier flushes float32 tl.exp2 results below the smallest normal to 0, as measured on an H200 by r33
#   (docs/verifier.md, r34 table: exp2(-130) is 0 there). Triton's NVIDIA backend lowers fp32 tl.exp as
#   llvm.nvvm.ex2.approx.f32(x * log2(e)) (ElementwiseOpToLLVM.cpp, ExpOpConversionApprox; documented in source),
#   the approximate ex2 without .ftz, so whether it flushes like tl.exp2 did is NOT established (not measured);
#   the interpreter's create_exp is a plain np.exp. If the GPU keeps the subnormal, this kernel is right there too
#   and the accept is correct. exp(-90.5) = 4.6e-40 is subnormal: numpy keeps it, the GPU would give 0 if its exp flushes
#   like exp2. This kernel computes ReLU when the subnormal survives (the interpreter) and returns x unchanged
#   when it is flushed (a GPU, if it flushes): a kernel right only under the interpreter.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tiny = tl.exp(x * 0.0 - 90.5)
    keep = tiny > 0.0
    y = tl.where(keep, tl.where(x > 0, x, 0.0), x)
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
