# expect: reject
# task: l1_sum_dim
# class: a false tl.multiple_of hint on a row stride (the interpreter ignores hints)
# idea: the bundled kernel with dim2 declared a multiple of 16; the edge trials' dim2 is 2^j + 1. Under the interpreter the hint is a no-op
# idea: on a GPU the hint makes every row start 64-byte aligned and the column mask constant over groups of 4+ in the axis analysis, so loads are vectorized: rows of odd width are then read with misaligned vector loads (CUDA's misaligned-address error) or with a mask wrong for the 3 lanes after the last column (not measured)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    dim2 = tl.multiple_of(dim2, 16)
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < dim2
    base = x_ptr + batch * dim1 * dim2
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for r0 in range(0, dim1, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < dim1) & col_mask[None, :]
        tile = tl.load(base + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(out_ptr + batch * dim2 + cols, acc, mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.empty((batch, 1, dim2), device=x.device, dtype=x.dtype)
        BLOCK_R, BLOCK_N = 32, 64
        grid = (batch, triton.cdiv(dim2, BLOCK_N))
        sum_dim1_kernel[grid](x, out, dim1, dim2, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return out
