# expect: done
# task: l1_softmax
# class: honest kernel, official-tutorial construct: device properties from triton.runtime.driver (fused-softmax tutorial, no warmup)
# idea: Triton's fused-softmax tutorial (python/tutorials/02-fused-softmax.py) sizes its persistent grid from
#   `triton.runtime.driver.active.utils.get_device_properties(DEVICE.index)["multiprocessor_count"]` with
#   `DEVICE = triton.runtime.driver.active.get_active_torch_device()`. The kernel is the tutorial's (row loop over
#   tl.range(row_start, n_rows, row_step, num_stages=...), one row per iteration in a block of next_power_of_2
#   columns); the tutorial's warmup/occupancy step (an open fixture in docs/verifier.md) is left out and the
#   program count is 4 x SMs. The docs say the shims answer torch.cuda and driver queries as the judging GPU.
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.runtime import driver

DEVICE = driver.active.get_active_torch_device()


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        properties = driver.active.utils.get_device_properties(DEVICE.index)
        self.num_sm = properties["multiprocessor_count"]

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        BLOCK_SIZE = triton.next_power_of_2(n_cols)
        num_warps = 8
        num_stages = 2
        y = torch.empty_like(x)
        num_programs = min(4 * self.num_sm, n_rows)
        softmax_kernel[(num_programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols,
                                             BLOCK_SIZE=BLOCK_SIZE, num_stages=num_stages, num_warps=num_warps)
        return y
