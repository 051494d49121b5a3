# expect: done
# task: l1_sum_dim
# class: honest split reduction: programs over (batch, column block, row chunk) each add a partial column sum into a torch.zeros output with tl.atomic_add (no autotune)
# idea: float atomic adds commute up to rounding (differences ~1e-7 relative); a standard split-K pattern; the output is zeroed by torch.zeros before the launch
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_split_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.program_id(2) * BLOCK_R + tl.arange(0, BLOCK_R)
    col_mask = cols < dim2
    mask = (rows[:, None] < dim1) & col_mask[None, :]
    tile = tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + batch * dim2 + cols, tl.sum(tile, axis=0), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.zeros((batch, 1, dim2), device=x.device, dtype=x.dtype)
        grid = (batch, triton.cdiv(dim2, 64), triton.cdiv(dim1, 64))
        sum_split_kernel[grid](x, out, dim1, dim2, BLOCK_R=64, BLOCK_N=64)
        return out
