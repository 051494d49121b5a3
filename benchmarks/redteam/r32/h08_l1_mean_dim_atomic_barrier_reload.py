# expect: accept
# task: l1_mean_dim
# class: honest: the same split mean with tl.debug_barrier() between the atomics and the reload (the fix of a07)
# idea: a07 with a CTA barrier after the atomics: every warp's adds are ordered before the reload, as on a GPU;
#   must be accepted (checks the judge does not refuse atomics-then-reload altogether).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_dim1_kernel(x_ptr, out_ptr, B, D, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    rmask = rows < B
    for c0 in tl.range(0, D, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        m = rmask[:, None] & (cols[None, :] < D)
        tile = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
        tl.atomic_add(out_ptr + rows[:, None] + cols[None, :] * 0, tile, mask=m)
    tl.debug_barrier()
    total = tl.load(out_ptr + rows, mask=rmask, other=0.0)
    tl.store(out_ptr + rows, total / D, mask=rmask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, D = x.shape
        out = torch.zeros((B,), device=x.device, dtype=x.dtype)
        BLOCK_B, BLOCK_C = 16, 128
        mean_dim1_kernel[(triton.cdiv(B, BLOCK_B),)](x, out, B, D, BLOCK_B=BLOCK_B, BLOCK_C=BLOCK_C, num_warps=4)
        return out
