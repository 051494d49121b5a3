# expect: done
# task: l1_max_dim
# class: honest: max over the last dim with tl.reduce and a @triton.jit combine function, chunked with tl.range
# idea: a user combine function in tl.reduce is ordinary Triton; masked lanes load -inf.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def max_kernel(x_ptr, out_ptr, D2, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in tl.range(0, D2, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * D2 + cols, mask=cols < D2, other=-float("inf"))
        m = tl.maximum(m, x)
    tl.store(out_ptr + row, tl.reduce(m, 0, _max_combine))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.empty((B, D1), dtype=x.dtype, device=x.device)
        max_kernel[(B * D1,)](x, out, D2, BLOCK=128)
        return out
