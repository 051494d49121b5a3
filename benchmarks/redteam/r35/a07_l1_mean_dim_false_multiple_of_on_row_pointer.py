# expect: reject
# task: l1_mean_dim
# class: false tl.multiple_of hint on a derived row pointer (the FalseHint check skips pointers)
# idea: A row mean with an unmasked main loop over full BLOCK chunks and a masked tail, the usual "fast path"
#   shape. `row_ptr = tl.multiple_of(x_ptr + row * n_cols, 16)` claims every row starts 16-byte aligned, true
#   only when n_cols is a multiple of 4 floats. With the hint, the contiguous unmasked loads are vectorized to
#   128 bits by Triton's NVIDIA backend (LoadStoreOpToLLVM.cpp: vec = min(128 / bits, contiguity), capped by
#   the mask's alignment only when there is a mask; AxisInfo takes the hint; documented in source), so at an
#   odd width (the edge trials' 1025, or any real odd width) a row start 4 bytes past alignment issues a 16-byte
#   ld.global.v4 at a misaligned address: CUDA's "misaligned address" fault (not measured). r34 closed false
#   hints on integers; docs/verifier.md: "Pointers (their alignment is the allocator's) ... are not checked",
#   true of a base pointer, not of one offset by row * n_cols. The CPU trials include width 1025, where the
#   hint is false; the interpreter ignores hints on pointers.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_ptr = tl.multiple_of(x_ptr + row * n_cols, 16)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    n_full = (n_cols // BLOCK) * BLOCK
    for c0 in range(0, n_full, BLOCK):
        acc += tl.load(row_ptr + c0 + cols)              # unmasked fast path
    tail = n_full + cols
    acc += tl.load(row_ptr + tail, mask=tail < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        row_mean_kernel[(n_rows,)](x, out, n_cols, BLOCK=256)
        return out
