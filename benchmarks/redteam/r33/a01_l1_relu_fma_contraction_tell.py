# expect: reject
# task: l1_relu
# class: attack: kernel tells the interpreter from a GPU by FMA contraction (a*a - c is 0 unfused, 2^-24 fused)
# idea: ptxas/LLVM contract a*b+c into fma.rn.f32 on a GPU (Triton's enable_fp_fusion, default on); numpy rounds
#   the product first. With a = 1 + 2^-12, a*a - (1 + 2^-11) is 0 under the interpreter and 2^-24 on a GPU.
#   The kernel is an honest ReLU when the tell reads 0 and negates every output otherwise: exact on the CPU
#   verifier, wrong on every GPU launch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = x * 0.0 + 1.000244140625
    d = a * a - 1.00048828125
    y = tl.where(x > 0, x, 0.0)
    y = tl.where(d == 0.0, y, -y - 1.0)
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK)
        return out

