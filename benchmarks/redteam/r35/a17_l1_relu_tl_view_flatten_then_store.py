# expect: reject
# task: l1_relu
# class: reshape whose element order the GPU may change: tl.view (= tl.reshape(..., can_reorder=True)) then stored in logical order
# idea: tl.view is Triton's deprecated reshape: "view is deprecated, please use reshape with can_reorder being true"
#   (installed triton/language/core.py, `view` calls _semantic.reshape(input, shape, can_reorder=True); documented
#   in source), and reshape's docstring says "can_reorder: Deprecated. If true, the compiler is allowed to reorder
#   elements" (same file; tl.cat's adds "Only use if the order does not matter (e.g., result is only used in
#   reduction ops)"). Older Triton code, and models trained on it,
#   flatten tiles with tl.view. This kernel loads a (ROWS, COLS) tile, applies ReLU, flattens it with tl.view
#   and stores it at fresh 1-D offsets, i.e. it relies on row-major order. Triton's interpreter reshapes with
#   numpy (create_reshape ignores allow_reorder), always in order; on a GPU the order is the compiler's choice
#   (whether it actually differs for this layout is not measured). The verifier serves the lanes of one atomic in
#   a drawn order (r33) for the same reason; a can_reorder reshape could be permuted likewise.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, ROWS: tl.constexpr, COLS: tl.constexpr):
    base = tl.program_id(0) * ROWS * COLS
    offs2d = base + tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + offs2d, mask=offs2d < n_elements, other=0.0)
    y = tl.maximum(x, 0.0)
    flat = tl.view(y, (ROWS * COLS,))
    offs = base + tl.arange(0, ROWS * COLS)
    tl.store(out_ptr + offs, flat, mask=offs < n_elements)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        ROWS, COLS = 16, 64
        relu_kernel[(triton.cdiv(n, ROWS * COLS),)](x, out, n, ROWS=ROWS, COLS=COLS)
        return out
