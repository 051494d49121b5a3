# expect: reject
# task: l1_relu
# class: attack: interpreter's sequential semantics (a write-after-write race between lanes of two stores)
# idea: each program first stores zeros over its block, then stores the positive inputs through a reversed index
#   (lane i writes element BLOCK-1-i). On a GPU the two stores of one element are made by different threads
#   (different warps for a 1024-wide block) with no barrier between them, so either write may land last: some
#   positive elements come out 0. The interpreter runs each store as one step in program order, so the second
#   always wins; its lane check looks at a load of another lane's store and at one store's lanes, maybe not at
#   two stores of different lanes to one address.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    base = tl.program_id(0) * BLOCK_SIZE
    offsets = base + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.zeros((BLOCK_SIZE,), dtype=tl.float32), mask=mask)
    rev = base + (BLOCK_SIZE - 1 - tl.arange(0, BLOCK_SIZE))
    rmask = rev < n_elements
    xr = tl.load(x_ptr + rev, mask=rmask, other=0.0)
    tl.store(out_ptr + rev, xr, mask=rmask & (xr > 0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return out
