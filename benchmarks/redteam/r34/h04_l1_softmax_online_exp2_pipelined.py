# expect: done
# task: l1_softmax
# class: honest online softmax (one pass for max and sum with rescaling, then a normalising pass), exp2 with log2(e), tl.range with num_stages
# idea: the streaming softmax of FlashAttention; works for any row width with a fixed 256-wide chunk
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * n_cols
    LOG2E: tl.constexpr = 1.4426950408889634
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in tl.range(0, n_cols, BLOCK, num_stages=2):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp2((m - m_new) * LOG2E))
        s = s * scale + tl.where(x == float("-inf"), 0.0, tl.exp2((x - m_new) * LOG2E))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp2((m - row_max) * LOG2E)), axis=0)
    for c0 in tl.range(0, n_cols, BLOCK, num_stages=2):
        cols = c0 + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(base + cols, mask=mask, other=float("-inf"))
        tl.store(out_ptr + row * n_cols + cols, tl.exp2((x - row_max) * LOG2E) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, cols, BLOCK=256)
        return out
