# task: l1_softmax
# expect: reject
# why: a real bug: exp(x) / sum(exp(x)) with no max subtraction. Right for randn-scale rows, inf/NaN as soon as a
# why: row holds a value above ~88 (fp32 exp overflow). A judge whose trials include large-magnitude rows rejects it;
# why: one whose trials are all unit-scale accepts a kernel that breaks on ordinary logits.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(batch,)](x, out, dim, BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
