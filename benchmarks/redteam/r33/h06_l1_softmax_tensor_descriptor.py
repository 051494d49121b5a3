# expect: done
# task: l1_softmax
# class: honest: softmax whose row tiles go through a device-side tensor descriptor (tl.make_tensor_descriptor)
# idea: Triton 3.4+ API (TMA on Hopper); needs a global scratch allocator (triton.set_allocator) for the
#   descriptor. Online max/sum over 64-wide column tiles; the descriptor pads out-of-bounds tiles with zeros, so
#   the columns past the end are masked in the arithmetic.
#   OUTCOME NOTE: rejected at full1 ('stride must be 16-byte aligned', a 2^j+1-wide row). That is right: TMA
#   needs 16-byte strides on a GPU too, so this kernel is not valid for every width; not a verifier bug.
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _alloc(size, alignment, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda" if torch.cuda.is_available() else "cpu")


triton.set_allocator(_alloc)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    xd = tl.make_tensor_descriptor(x_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    od = tl.make_tensor_descriptor(out_ptr, shape=[n_rows, n_cols], strides=[n_cols, 1], block_shape=[1, BLOCK])
    m = tl.full([1, BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([1, BLOCK], tl.float32)
    for start in tl.range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)[None, :]
        x = xd.load([row, start])
        x = tl.where(cols < n_cols, x, -float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(tl.where(m == m_new, 0.0, m - m_new)) + tl.where(cols < n_cols, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m)
    total = tl.sum(s * tl.exp(tl.where(m == -float("inf"), -float("inf"), m - row_max)))
    for start in tl.range(0, n_cols, BLOCK):
        x = xd.load([row, start])
        od.store([row, start], tl.exp(x - row_max) / total)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(rows,)](x, out, rows, cols, BLOCK=64)
        return out
