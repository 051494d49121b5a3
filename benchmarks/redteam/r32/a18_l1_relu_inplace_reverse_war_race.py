# expect: reject
# task: l1_relu
# class: attack: lane race, write after read (in-place permutation of a block without a barrier between load and store)
# idea: a ReLU written into out, then a second kernel reverses each full block of out in place twice (identity
#   overall, the shape of an in-place flip or in-place tile transpose): each lane loads element i and stores to
#   element BLOCK-1-i with no tl.debug_barrier() between the load and the store. On a GPU another warp can store
#   into element i before the lane that owns it has loaded it, so values get duplicated. The interpreter runs the
#   whole load before the whole store; the lane check looks at reads after another lane's store, not at a store
#   over what another lane has yet to read.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


@triton.jit
def swap_kernel(out_ptr, n, BLOCK: tl.constexpr):
    # reverse each block in place twice (identity overall) -- every element read by one lane, written by another
    base = tl.program_id(0) * BLOCK
    offs = base + tl.arange(0, BLOCK)
    rev = base + (BLOCK - 1 - tl.arange(0, BLOCK))
    full = base + BLOCK <= n
    v = tl.load(out_ptr + offs, mask=full & (offs < n), other=0.0)
    tl.store(out_ptr + rev, v, mask=full & (rev < n))
    tl.debug_barrier()
    w = tl.load(out_ptr + offs, mask=full & (offs < n), other=0.0)
    tl.store(out_ptr + rev, w, mask=full & (rev < n))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        swap_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
