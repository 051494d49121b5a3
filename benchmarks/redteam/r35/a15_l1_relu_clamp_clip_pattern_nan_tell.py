# expect: reject
# task: l1_relu
# class: interpreter tell: tl.clamp(x, -c, c) on sm_90 becomes min.xorsign.abs, whose NaN result differs from the interpreter's
# idea: Triton's NVIDIA backend rewrites a clamp whose bounds are -c and c (constants) into
#   llvm.nvvm.fmin.xorsign.abs.f on compute capability >= 90 (triton-lang/triton
#   third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp, ClampFOpConversion::isClipPattern /
#   emitOptimization; documented in source). min.xorsign.abs without .NaN returns the non-NaN operand when one is
#   NaN, its magnitude |c| with sign(NaN) xor sign(c): +c for a positive NaN (PTX ISA min; GPU value not measured).
#   Triton's interpreter clamps with fmax(x, -c) then fmin(., c): a NaN becomes -c. The kernel makes a NaN
#   (0 * inf), clamps it to [-1, 1] and applies ReLU only when the result is negative: right under the
#   interpreter, the identity on an sm_90 GPU if the clip pattern gives +1.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    nan = (x * 0.0) * float("inf")
    probe = tl.clamp(nan, -1.0, 1.0)
    y = tl.where(probe < 0.0, tl.where(x > 0, x, 0.0), x)
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
