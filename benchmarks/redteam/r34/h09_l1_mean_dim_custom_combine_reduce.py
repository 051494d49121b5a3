# expect: done
# task: l1_mean_dim
# class: honest row mean whose sum is a tl.reduce with a user @triton.jit combine function (a + b), one program per row in chunks of 512
# idea: tl.reduce with a user combine function is Triton's documented general reduction; a plain add is what tl.sum does
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_combine(a, b):
    return a + b


@triton.jit
def mean_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    total = tl.reduce(acc, 0, add_combine)
    tl.store(out_ptr + row, total / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty((rows,), device=x.device, dtype=x.dtype)
        mean_kernel[(rows,)](x, out, cols, BLOCK=512)
        return out
