# expect: done
# task: l1_max_dim
# class: honest kernel, unusual construct: a split row max combined with float tl.atomic_max into a -inf filled output
# idea: Each program reduces a 128-wide chunk of a row and combines its partial max with tl.atomic_max on float32
#   into an output filled with -inf by torch.full. Triton supports float atomic_max on NVIDIA (it is lowered
#   through signed/unsigned integer atomics, correct for every finite value and -inf). Atomic max commutes, so
#   the result is order independent and exact. The verifier should accept it.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def split_max_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    m = tl.max(x, axis=0)
    tl.atomic_max(out_ptr + row, m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        b, d1, d2 = x.shape
        out = torch.full((b, d1), float("-inf"), device=x.device, dtype=x.dtype)
        BLOCK = 128
        split_max_kernel[(b * d1, triton.cdiv(d2, BLOCK))](x, out, d2, BLOCK=BLOCK)
        return out
