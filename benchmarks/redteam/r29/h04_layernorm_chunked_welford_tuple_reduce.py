# task: l1_layernorm
# expect: done
# modes: correctness timing
# cpu: rejected timeout (full3, 60 s: the interpreter runs out of time, most likely on the tuple tl.reduce with a jit combine function (cause not isolated); tiny, full0-full2 passed)
# gpu-guess: correctness: accepted (Welford is stable on the rows shifted 100 RMS from zero, where E[x^2]-mean^2 fails). timing: accepted, honest speed (two passes over a 4096-wide row held in L2/L1).
# why: Honest and unusual: a row wider than one block, streamed in 256-column chunks with per-lane Welford
# why: accumulators (count, mean, M2), merged across lanes by tl.reduce over a tuple with a @triton.jit combine
# why: function (Chan's parallel formula), then a second pass normalizes. Exercises tuple reductions with a user
# why: combine function, count-weighted merges with empty lanes (count 0), and a loop-carried tuple state.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    safe = tl.where(n == 0, 1.0, n)
    delta = mean_b - mean_a
    frac_b = tl.where(n == 0, 0.0, n_b / safe)
    mean = mean_a + delta * frac_b
    m2 = m2_a + m2_b + delta * delta * n_a * frac_b
    return mean, m2, n


@triton.jit
def layernorm_welford_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * n_cols
    lanes = tl.arange(0, BLOCK)
    mean = tl.zeros((BLOCK,), dtype=tl.float32)
    m2 = tl.zeros((BLOCK,), dtype=tl.float32)
    cnt = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        m = cols < n_cols
        x = tl.load(base + cols, mask=m, other=0.0)
        new_cnt = cnt + tl.where(m, 1.0, 0.0)
        delta = x - mean
        mean = tl.where(m, mean + delta / tl.where(new_cnt == 0, 1.0, new_cnt), mean)
        m2 = tl.where(m, m2 + delta * (x - mean), m2)
        cnt = new_cnt
    row_mean, row_m2, row_n = tl.reduce((mean, m2, cnt), 0, welford_combine)
    rstd = 1.0 / tl.sqrt(row_m2 / row_n + eps)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + lanes
        m = cols < n_cols
        x = tl.load(base + cols, mask=m, other=0.0)
        w = tl.load(w_ptr + cols, mask=m, other=0.0)
        b = tl.load(b_ptr + cols, mask=m, other=0.0)
        tl.store(out_ptr + row * n_cols + cols, (x - row_mean) * rstd * w + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        n_rows = x.numel() // hidden
        layernorm_welford_kernel[(n_rows,)](x, self.ln.weight, self.ln.bias, out, hidden, self.ln.eps, BLOCK=256)
        return out
