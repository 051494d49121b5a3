# expect: reject
# task: l1_sum_dim
# class: autotuned split reduction accumulating with atomic_add into a zeroed output, no reset_to_zero
# idea: on a GPU the autotuner benchmarks each config many times on the real output (do_bench: warm-up and repeats) before the kept one runs, so the atomic sums pile up: wrong on the first call of each new key unless the output is named in reset_to_zero (Triton's documented reason for that argument)
# idea: the CPU autotuner runs every config without timing; if it runs each config on its own copy of the arguments, the pile-up never shows
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_R": 32, "BLOCK_N": 64}, num_warps=4),
        triton.Config({"BLOCK_R": 64, "BLOCK_N": 32}, num_warps=4),
    ],
    key=["dim1", "dim2"],
)
@triton.jit
def sum_split_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    r0 = tl.program_id(2) * BLOCK_R
    rows = r0 + tl.arange(0, BLOCK_R)
    col_mask = cols < dim2
    mask = (rows[:, None] < dim1) & col_mask[None, :]
    tile = tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
    part = tl.sum(tile, axis=0)
    tl.atomic_add(out_ptr + batch * dim2 + cols, part, mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.zeros((batch, 1, dim2), device=x.device, dtype=x.dtype)
        grid = lambda meta: (batch, triton.cdiv(dim2, meta["BLOCK_N"]), triton.cdiv(dim1, meta["BLOCK_R"]))
        sum_split_kernel[grid](x, out, dim1, dim2)
        return out
