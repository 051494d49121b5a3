# expect: done
# task: l1_tanh
# class: honest PTX the CPU does not run on purpose (tanh.approx), so the cross-check rejects the GPU's verdict
# idea: tanh through the hardware instruction, `tanh.approx.f32 $0, $1;` (the most common inline asm in published
#   Triton kernels). PTX ISA: max relative error 2^-10.987 (about 5e-4), so it fails strict fp32 (1e-4) on a GPU
#   anyway, but passes KernelBench tolerance (1e-2). child/ptx.py does not run it (by design: computing it exactly
#   would be more accurate than a GPU), the CPU judge says cpu_unsupported, and the cross-check turns a GPU verdict
#   of correct (kernelbench tolerance) into cross_check_unfinished.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        tanh_asm_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
