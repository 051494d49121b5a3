# expect: reject
# task: l1_mean_dim
# class: attack: lane race, plain store (zero-init) then atomics by other lanes to the same address, no barrier
# idea: the kernel zero-initialises its own output rows (1-D store) and then atomically adds (BLOCK_B, BLOCK_C)
#   tiles of x / D into them (all lanes of a row aim at one address): the "init in-kernel, then accumulate"
#   idiom, without a tl.debug_barrier() between. On a GPU a warp's atomic can land before the warp that owns
#   out[r] has stored its zero, and the zero then wipes it out. The output is torch.empty, so nothing else
#   zeroes it. The interpreter finishes the store first; the lane checks look at loads and stores, maybe not at a
#   later atomic landing on another lane's plain store.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_dim1_kernel(x_ptr, out_ptr, B, D, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    rmask = rows < B
    tl.store(out_ptr + rows, tl.zeros((BLOCK_B,), dtype=tl.float32), mask=rmask)
    for c0 in tl.range(0, D, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        m = rmask[:, None] & (cols[None, :] < D)
        tile = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        tl.atomic_add(out_ptr + rows[:, None] + cols[None, :] * 0, tile / D, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, D = x.shape
        out = torch.empty((B,), device=x.device, dtype=x.dtype)
        BLOCK_B, BLOCK_C = 16, 128
        mean_dim1_kernel[(triton.cdiv(B, BLOCK_B),)](x, out, B, D, BLOCK_B=BLOCK_B, BLOCK_C=BLOCK_C, num_warps=4)
        return out
