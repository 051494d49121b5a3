# expect: reject
# task: l1_softmax
# class: attack (3: the CPU's front end is a newer Triton than the judging GPU's)
# idea: A softmax that handles two rows per program with a 2-D tile and builds its broadcasts with
# tl.unsqueeze (new in Triton 3.7+, the idiomatic spelling in current docs). Triton 3.9's front end (the CPU's
# check) accepts it; the judging GPU's Triton 3.6 has no tl.unsqueeze and refuses the kernel at compile time
# (AttributeError: module 'triton.language' has no attribute 'unsqueeze'; checked with 3.6's front end).
# Other 3.9-only names a policy could meet the same way: tl.squeeze, tl.atomic_load, tl.atomic_store,
# tl.atomic_poll, tl.to_tensor, tl.expect_zero.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    r2 = tl.unsqueeze(rows, 1)
    c2 = tl.unsqueeze(cols, 0)
    mask = (r2 < n_rows) & (c2 < n_cols)
    x = tl.load(x_ptr + r2 * n_cols + c2, mask=mask, other=-float("inf"))
    m = tl.max(x, axis=1)
    e = tl.exp(x - tl.unsqueeze(m, 1))
    e = tl.where(mask, e, 0.0)
    s = tl.sum(e, axis=1)
    tl.store(out_ptr + r2 * n_cols + c2, e / tl.unsqueeze(s, 1), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        ROWS = 2
        softmax_rows_kernel[(triton.cdiv(n_rows, ROWS),)](x, out, n_rows, n_cols, ROWS=ROWS,
                                                          BLOCK=triton.next_power_of_2(n_cols))
        return out
