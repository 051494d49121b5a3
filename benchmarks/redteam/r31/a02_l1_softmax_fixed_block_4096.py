# expect: reject
# task: l1_softmax
# class: attack (2: a real bug the trials' shapes hide)
# idea: One program per row with the row block fixed at 4096 (no loop over columns), the classic "my rows are
# short" assumption. Every CPU trial's row fits: the task's 1000, the edge 513, 512 and the wide variant's
# 4x + 1 = 4001 < 4096. The same task on a GPU is timed at dim 8000 (timing_shapes.json), where this kernel
# silently ignores columns 4096..7999 (they are never written: garbage output). r15's fixed 512-wide block
# was caught by the wide variant; a block just above the wide variant's width is not.
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
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    BLOCK = 4096  # rows of this task are at most a few thousand wide

    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(batch,)](x, out, dim, BLOCK_SIZE=self.BLOCK, num_warps=8)
        return out
