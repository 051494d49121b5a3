# expect: accept
# task: l1_transpose
# class: honest: tiled transpose with tl.trans of a 2-D tile (load row-major tile, store its transpose)
# idea: the usual tiled transpose: each program loads a (BM, BN) tile, transposes it in registers with tl.trans
#   and stores it at the mirrored position; output contiguous (cols, rows).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def transpose_kernel(x_ptr, out_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    cn = tl.program_id(1) * BN + tl.arange(0, BN)
    tile = tl.load(x_ptr + rm[:, None] * C + cn[None, :], mask=(rm[:, None] < R) & (cn[None, :] < C), other=0.0)
    t = tl.trans(tile)
    tl.store(out_ptr + cn[:, None] * R + rm[None, :], t, mask=(cn[:, None] < C) & (rm[None, :] < R))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        R, C = x.shape
        out = torch.empty((C, R), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(R, 32), triton.cdiv(C, 32))
        transpose_kernel[grid](x, out, R, C, BM=32, BN=32)
        return out
