# expect: accept
# task: l1_sum_dim
# class: honest: split reduction with atomics, a 2-D tile atomically added into a broadcast address grid
# idea: each program takes a chunk of dim1 and atomically adds its whole (BLOCK_R, BLOCK_N) tile into out,
#   every row of the tile aimed at the same column address (a broadcast pointer: many lanes of one atomic hit one
#   address). On a GPU each lane's atomic is its own, so the sum is right (up to float order); the output is
#   zeroed every forward. A lane/race check that treats lanes of one atomic hitting one address as a conflict,
#   or an interpreter that applies a vector atomic as one gather-add-scatter, would reject it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_atomic_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.program_id(2) * BLOCK_R + tl.arange(0, BLOCK_R)
    mask = (rows[:, None] < dim1) & (cols[None, :] < dim2)
    tile = tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
    dst = out_ptr + batch * dim2 + cols[None, :] + rows[:, None] * 0
    tl.atomic_add(dst, tile, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.zeros((batch, 1, dim2), device=x.device, dtype=x.dtype)
        BLOCK_R, BLOCK_N = 16, 64
        grid = (batch, triton.cdiv(dim2, BLOCK_N), triton.cdiv(dim1, BLOCK_R))
        sum_dim1_atomic_kernel[grid](x, out, dim1, dim2, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return out
