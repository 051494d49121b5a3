# expect: reject
# task: l1_max_dim
# class: attack: a classic masking bug (masked lanes of a max read as 0.0); training's 2 trials
# idea: tl.load(..., other=0.0) in a max reduction: a row whose values are all negative returns 0 wherever the
#   block has masked lanes. On randn rows of 300 (or 257) values the max is always positive, so plain trials pass;
#   only rows shifted far below zero show it (the verifier's full2 regime, r15_max_padded_with_zero). Training's
#   num_trials: 2 (tiny, full0, full1: plain and x0.01 values) never draws such rows.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_dim2_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        b, d1, d2 = x.shape
        out = torch.empty((b, d1), device=x.device, dtype=x.dtype)
        max_dim2_kernel[(b * d1,)](x, out, d2, BLOCK=triton.next_power_of_2(d2))
        return out
