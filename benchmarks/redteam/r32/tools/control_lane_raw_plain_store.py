# control (not a case): the documented lane check on a plain store read back by another lane, no barrier
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0) * BLOCK_SIZE
    offsets = base + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
    rev = base + (BLOCK_SIZE - 1 - tl.arange(0, BLOCK_SIZE))
    rmask = rev < n_elements
    v = tl.load(out_ptr + rev, mask=rmask, other=0.0)
    tl.store(out_ptr + rev, tl.maximum(v, 0.0), mask=rmask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
