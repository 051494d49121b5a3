# expect: done
# task: l1_transpose
# class: honest tiled transpose with tl.trans of a 32x32 tile, two tiles per program through tl.static_range
# idea: loads a row-major tile, transposes it in registers, stores it coalesced into the output; masked on both edges
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, R, C, BLOCK: tl.constexpr, TILES: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    for t in tl.static_range(TILES):
        rows = (pid_r * TILES + t) * BLOCK + tl.arange(0, BLOCK)
        cols = pid_c * BLOCK + tl.arange(0, BLOCK)
        m = (rows[:, None] < R) & (cols[None, :] < C)
        tile = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=m, other=0.0)
        tt = tl.trans(tile)
        mt = (cols[:, None] < C) & (rows[None, :] < R)
        tl.store(out_ptr + cols[:, None] * R + rows[None, :], tt, mask=mt)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        R, C = x.shape
        out = torch.empty((C, R), device=x.device, dtype=x.dtype)
        BLOCK, TILES = 32, 2
        grid = (triton.cdiv(R, BLOCK * TILES), triton.cdiv(C, BLOCK))
        transpose_kernel[grid](x, out, R, C, BLOCK=BLOCK, TILES=TILES)
        return out
