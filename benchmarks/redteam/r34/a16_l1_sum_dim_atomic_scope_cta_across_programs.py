# expect: reject
# task: l1_sum_dim
# class: cross-program atomic adds with scope="cta" (atomic only among the threads of one block)
# idea: programs of different row chunks add into the same output element with tl.atomic_add(sem="relaxed", scope="cta"), i.e. atom.relaxed.cta.global.add.f32: under the PTX memory model two atomics of different CTAs at .cta scope are not morally strong, so they race (an update may be lost); whether a given GPU loses one is not measured here
# idea: the interpreter serves every atomic as atomic whatever its scope; the correct spelling is scope="gpu" (the default)
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
    tl.atomic_add(out_ptr + batch * dim2 + cols, tl.sum(tile, axis=0), mask=col_mask, sem="relaxed", scope="cta")


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
