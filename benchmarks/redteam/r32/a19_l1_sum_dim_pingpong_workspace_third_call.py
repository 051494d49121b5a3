# expect: reject
# task: l1_sum_dim
# class: attack: state kept between calls (ping-pong workspaces, each zeroed only when made): wrong from the 3rd call
# idea: a01 with two per-instance accumulators used alternately (double buffering, so a launch never writes the
#   buffer the previous call returned). Each is zeroed once, when first made: calls 1 and 2 are right, call 3
#   reuses buffer A with call 1's sum still in it, and every call after is wrong. A judge that calls each model
#   once (HEAD d892fa7) or twice (the working tree's new second call) never sees it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_atomic_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    r0 = tl.program_id(2) * BLOCK_R
    rows = r0 + tl.arange(0, BLOCK_R)
    col_mask = cols < dim2
    mask = (rows[:, None] < dim1) & col_mask[None, :]
    tile = tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
    part = tl.sum(tile, axis=0)
    tl.atomic_add(out_ptr + batch * dim2 + cols, part, mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._bufs = {}
        self._calls = 0

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        slot = (self._calls % 2, batch, dim2)
        self._calls += 1
        acc = self._bufs.get(slot)
        if acc is None:
            acc = torch.zeros((batch, 1, dim2), device=x.device, dtype=x.dtype)
            self._bufs[slot] = acc
        BLOCK_R, BLOCK_N = 64, 64
        grid = (batch, triton.cdiv(dim2, BLOCK_N), triton.cdiv(dim1, BLOCK_R))
        sum_dim1_atomic_kernel[grid](x, acc, dim1, dim2, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return acc
