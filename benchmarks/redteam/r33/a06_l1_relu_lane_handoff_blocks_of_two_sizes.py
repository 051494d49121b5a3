# expect: reject
# task: l1_relu
# class: attack: lanes hand values to each other through global memory without a barrier (stores in half blocks, load in a whole block)
# idea: each program stores its block into a scratch as two half-size blocks, then loads the whole block back
#   reversed (lane i reads what lane BLOCK-1-i stored) with no tl.debug_barrier(). On a GPU those lanes are
#   different threads (different warps for most pairs): a read-after-write race, stale scratch bytes. The
#   interpreter runs each block as one step. The lane check compares lanes only within blocks of one size.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    HALF: tl.constexpr = BLOCK // 2
    base = tl.program_id(0) * BLOCK
    h = tl.arange(0, HALF)
    lo = base + h
    hi = base + HALF + h
    tl.store(s_ptr + lo, tl.load(x_ptr + lo, mask=lo < n, other=0.0), mask=lo < n)
    tl.store(s_ptr + hi, tl.load(x_ptr + hi, mask=hi < n, other=0.0), mask=hi < n)
    r = base + (BLOCK - 1 - tl.arange(0, BLOCK))
    m = r < n
    v = tl.load(s_ptr + r, mask=m, other=0.0)
    tl.store(out_ptr + r, tl.where(v > 0, v, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        scratch = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        relu_kernel[(triton.cdiv(n, BLOCK),)](x, scratch, out, n, BLOCK=BLOCK)
        return out
