# expect: reject
# task: l1_softmax
# class: attack (2/3: a race between lanes of one program, through a one-element store)
# idea: A chunked row softmax that keeps its row statistics in a small global workspace: the row max and
# the sum of exp are stored as scalars (one element: on a GPU one thread stores them) and every lane then
# loads them back as a block (tl.load(ws + zeros)) with no tl.debug_barrier() in between. On a GPU the other
# warps can read the workspace before the storing thread's write lands (they read the noise torch.empty
# left there, or the previous row's value). The interpreter runs the program as one step, and its lane
# check does not compare blocks of different sizes (a one-element store against a BLOCK-wide load).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_ws_kernel(x_ptr, out_ptr, ws_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    xr = x_ptr + row * n_cols
    orow = out_ptr + row * n_cols
    zeros = tl.zeros((BLOCK,), tl.int32)
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(xr + cols, mask=cols < n_cols, other=-float("inf")))
    tl.store(ws_ptr + row * 2, tl.max(m, axis=0))
    row_max = tl.load(ws_ptr + row * 2 + zeros)          # every lane reads the scalar back
    s = tl.zeros((BLOCK,), tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(xr + cols, mask=cols < n_cols, other=-float("inf"))
        s += tl.exp(x - row_max)
    tl.store(ws_ptr + row * 2 + 1, tl.sum(s, axis=0))
    denom = tl.load(ws_ptr + row * 2 + 1 + zeros)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(xr + cols, mask=mask, other=-float("inf"))
        tl.store(orow + cols, tl.exp(x - row_max) / denom, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        ws = torch.empty((n_rows * 2,), device=x.device, dtype=torch.float32)
        softmax_ws_kernel[(n_rows,)](x, out, ws, n_cols, BLOCK=256)
        return out
