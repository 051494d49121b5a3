# expect: reject
# task: l1_mean_dim
# class: attack: interpreter's sequential semantics (lanes read what other lanes' atomics wrote, no barrier)
# idea: each program owns BLOCK_B rows; it atomically adds every (BLOCK_B, BLOCK_C) tile into out[rows] (all lanes
#   of a row aim at one address), then, with no tl.debug_barrier, loads out[rows] back in a 1-D layout, divides by
#   the row length and stores. On a GPU the atomics are fire-and-forget reductions issued by every warp; the lane
#   that reloads out[r] is not ordered after the other warps' adds to it, so it can read a partial sum. The
#   interpreter finishes the whole atomic before the load; its lane check looks at loads of another lane's
#   *store*, maybe not at an atomic's write.
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
