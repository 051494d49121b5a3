"""Reference solution for l2_scale_causal_softmax: scale, causal mask and softmax fused.

The scores are viewed as (batch * heads * seq, seq) rows; row r is query position r % seq, and keys after it
are masked. Each program handles BLOCK_ROWS rows as one 2-D tile.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def causal_softmax_kernel(x_ptr, out_ptr, n_rows, seq_len, scale,
                          BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_COLS)
    queries = rows % seq_len
    in_bounds = (rows[:, None] < n_rows) & (cols[None, :] < seq_len)
    offsets = rows[:, None] * seq_len + cols[None, :]
    x = tl.load(x_ptr + offsets, mask=in_bounds, other=0.0)
    # The diagonal is never masked, so every row keeps a finite max (also the out-of-bounds rows).
    s = tl.where(cols[None, :] <= queries[:, None], x * scale, -float("inf"))
    e = tl.exp(s - tl.max(s, axis=1)[:, None])
    tl.store(out_ptr + offsets, e / tl.sum(e, axis=1)[:, None], mask=in_bounds)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        scores = scores.contiguous()
        seq_len = scores.shape[-1]
        n_rows = scores.numel() // seq_len
        out = torch.empty_like(scores)
        BLOCK_ROWS = 8
        grid = (triton.cdiv(n_rows, BLOCK_ROWS),)
        causal_softmax_kernel[grid](scores, out, n_rows, seq_len, self.scale,
                                    BLOCK_ROWS=BLOCK_ROWS, BLOCK_COLS=triton.next_power_of_2(seq_len))
        return out
