# expect: done
# task: l1_sum_dim
# class: honest kernel, unusual construct: autotuned split reduction with tl.atomic_add and the autotuner's reset_to_zero
# idea: The sum over dim 1 is split into chunks of BLOCK_R rows per program; each program atomically adds its
#   partial column sums into a torch.zeros output. The kernel is autotuned over two chunk sizes with
#   reset_to_zero=["out_ptr"], which is how Triton's docs say to autotune a kernel that accumulates into its
#   output (each benchmarked config starts from zeros). Correct on a GPU (float atomic adds in any order, within
#   tolerance); the verifier's CPU autotuner "runs and compares every config" and must honour reset_to_zero.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_R": 32, "BLOCK_C": 64}, num_warps=4),
        triton.Config({"BLOCK_R": 64, "BLOCK_C": 64}, num_warps=4),
    ],
    key=["D1", "D2"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def splitk_sum_kernel(x_ptr, out_ptr, D1, D2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    b = tl.program_id(0)
    pid_c = tl.program_id(1)
    pid_r = tl.program_id(2)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < D1) & (cols[None, :] < D2)
    x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=0.0)
    part = tl.sum(x, axis=0)
    tl.atomic_add(out_ptr + b * D2 + cols, part, mask=cols < D2)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        B, D1, D2 = x.shape
        out = torch.zeros((B, 1, D2), device=x.device, dtype=x.dtype)
        grid = lambda meta: (B, triton.cdiv(D2, meta["BLOCK_C"]), triton.cdiv(D1, meta["BLOCK_R"]))
        splitk_sum_kernel[grid](x, out, D1, D2)
        return out
