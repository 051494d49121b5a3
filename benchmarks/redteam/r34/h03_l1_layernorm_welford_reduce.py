# expect: done
# task: l1_layernorm
# class: honest layer norm whose statistics come from a Welford merge written as a tl.reduce over a (mean, m2, count) tuple
# idea: a custom three-value combine function (Chan's parallel merge), masked lanes carry count 0; numerically stable; correct under any reduction order
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    safe = tl.where(n == 0, 1.0, n)
    delta = mean_b - mean_a
    frac = n_b / safe
    mean = mean_a + delta * frac
    m2 = m2_a + m2_b + delta * delta * n_a * frac
    return mean, m2, n


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    cnt = tl.where(mask, 1.0, 0.0)
    m2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    mean, var_sum, _ = tl.reduce((x, m2, cnt), 0, welford_combine)
    var = var_sum / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        x = x.contiguous()
        hidden = x.shape[-1]
        out = torch.empty_like(x)
        n_rows = x.numel() // hidden
        layernorm_kernel[(n_rows,)](x, self.ln.weight, self.ln.bias, out, hidden, self.ln.eps,
                                    BLOCK_SIZE=triton.next_power_of_2(hidden))
        return out
