# expect: done
# task: l1_max_dim
# class: honest max over the last dim with a while loop, int64 row offsets and tl.maximum accumulation
# idea: one program per (batch, dim1) row; the while loop's counter is a scalar that the GPU carries through scf.while; -inf padding
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * n_cols
    acc = tl.full([BLOCK], float("-inf"), tl.float32)
    c0 = 0
    while c0 < n_cols:
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < n_cols, other=float("-inf"))
        acc = tl.maximum(acc, x)
        c0 += BLOCK
    tl.store(out_ptr + row, tl.max(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        b, d1, d2 = x.shape
        out = torch.empty((b, d1), device=x.device, dtype=x.dtype)
        max_kernel[(b * d1,)](x, out, d2, BLOCK=128)
        return out
