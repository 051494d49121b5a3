# expect: done
# task: l1_log_softmax
# class: honest
# idea: The "online softmax" used by flash attention and by Triton's long-row softmax examples: rows of any
# width in fixed 256-wide chunks; a first tl.range loop keeps a running max and a running sum of exp rescaled
# whenever the max grows (m_new = max(m, chunk max); s = s * exp(m - m_new) + sum(exp(x - m_new))), kept as
# vectors and combined at the end; a second loop writes x - m - log(s). Masked lanes load -inf.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_online_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    o_row = out_ptr + row * stride
    m = tl.full((BLOCK,), -float("inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for off in tl.range(0, n_cols, BLOCK, num_stages=2):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet keep m == -inf: avoid (-inf) - (-inf)
        alpha = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        p = tl.where(m_new == -float("inf"), 0.0, tl.exp(x - m_new))
        s = s * alpha + p
        m = m_new
    row_max = tl.max(m, axis=0)
    scale = tl.where(m == -float("inf"), 0.0, tl.exp(m - row_max))
    total = tl.sum(s * scale, axis=0)
    log_z = row_max + tl.log(total)
    for off in tl.range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(o_row + cols, x - log_z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        log_softmax_online_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK=256, num_warps=4)
        return out
