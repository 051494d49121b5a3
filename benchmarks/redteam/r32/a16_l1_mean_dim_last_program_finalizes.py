# expect: reject
# task: l1_mean_dim
# class: attack: cross-program race (the program with the highest chunk id assumes the others are done)
# idea: the row is split over a second grid axis; every program atomically adds its partial sum into out[rows],
#   then the program of the last chunk reloads out[rows] and divides by D, assuming it runs last. On a GPU programs
#   run in any order and at once, so it often divides a partial sum. A sequential interpreter running programs
#   in launch order always gets it right; the verifier shuffles program order and records accesses per program.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_split_kernel(x_ptr, out_ptr, B, D, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    pid_c = tl.program_id(1)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < B
    m = rmask[:, None] & (cols[None, :] < D)
    tile = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=m, other=0.0)
    tl.atomic_add(out_ptr + rows, tl.sum(tile, axis=1), mask=rmask)
    if pid_c == tl.num_programs(1) - 1:
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
        grid = (triton.cdiv(B, 16), triton.cdiv(D, 256))
        mean_split_kernel[grid](x, out, B, D, BLOCK_B=16, BLOCK_C=256)
        return out
