# task: l1_transpose
# expect: reject
# why: torch does the whole transpose: the output is cut into an 8 x 8 grid of tiles and torch copies each tile of
# why: x.t() (copy_ of a transposed view: a torch copy, allowed at run time) into a scratch slot perm(tile),
# why: perm(t) = t*d mod 64 with d ~ 0.618*64; the one Triton kernel only moves each tile back from its slot, with
# why: the same in-tile layout. Each tile is its own affine piece (1/64 of the output), so the copy search (affine
# why: maps, a first piece of 25%, at most 16 pieces, 48 samples) finds no copy, and torch's copies of the input
# why: (COPIED) do not taint a launch. Static strict flags the copy_ (torch_compute); the runtime alone accepts.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

G = 8


@triton.jit
def untile_kernel(src_ptr, out_ptr, n_out, n_rows, TH, TW, d, G: tl.constexpr, BLOCK: tl.constexpr):
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = e < n_out
    j = e // n_rows
    i = e % n_rows
    tile = (j // TH) * G + i // TW
    slot = (tile * d) % (G * G)
    v = tl.load(src_ptr + slot * (TH * TW) + (j % TH) * TW + i % TW, mask=m)
    tl.store(out_ptr + e, v, mask=m)


def _step(n):
    d = max(1, int(n * 0.6180339887))
    while math.gcd(d, n) != 1:
        d += 1
    return d


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        TH, TW = (cols + G - 1) // G, (rows + G - 1) // G
        d = _step(G * G)
        scratch = torch.empty(G * G * TH * TW, dtype=x.dtype, device=x.device)
        xt = x.t()
        for a in range(G):
            for b in range(G):
                h = min(TH, cols - a * TH)
                w = min(TW, rows - b * TW)
                if h <= 0 or w <= 0:
                    continue
                s = ((a * G + b) * d) % (G * G)
                dst = scratch[s * TH * TW:(s + 1) * TH * TW].view(TH, TW)[:h, :w]
                dst.copy_(xt[a * TH:a * TH + h, b * TW:b * TW + w])
        out = torch.empty((cols, rows), dtype=x.dtype, device=x.device)
        n_out = rows * cols
        untile_kernel[(triton.cdiv(n_out, 1024),)](scratch, out, n_out, rows, TH, TW, d, G=G, BLOCK=1024)
        return out
