# expect: done
# task: l1_softmax
# class: honest: persistent softmax (grid = SM count from torch.cuda, tl.range over rows) with an online max/sum over column chunks
# idea: a GPU-style persistent kernel: programs stride over rows; each row is read in 256-wide chunks twice
#   (online max and rescaled sum, then the normalised write), so any width works.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for row in tl.range(pid, n_rows, nprog):
        base = row.to(tl.int64) * n_cols
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for start in tl.range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + base + cols, mask=cols < n_cols, other=-float("inf"))
            m_new = tl.maximum(m, x)
            s = s * tl.exp(tl.where(m == m_new, 0.0, m - m_new)) + tl.where(x == -float("inf"), 0.0, tl.exp(x - m_new))
            m = m_new
        row_max = tl.max(m, axis=0)
        total = tl.sum(s * tl.exp(tl.where(m == -float("inf"), -float("inf"), m - row_max)), axis=0)
        for start in tl.range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_ptr + base + cols, mask=mask, other=-float("inf"))
            tl.store(out_ptr + base + cols, tl.exp(x - row_max) / total, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_sms = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 4

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        grid = (min(rows, self.num_sms),)
        softmax_kernel[grid](x, out, rows, cols, BLOCK=256)
        return out
