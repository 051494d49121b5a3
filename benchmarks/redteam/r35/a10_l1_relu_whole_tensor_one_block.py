# expect: reject
# task: l1_relu
# class: real-scale launch config the GPU refuses: the whole tensor as one block (Triton's 2^20-element tensor limit)
# idea: A naive single-program kernel, BLOCK_SIZE = next_power_of_2(numel), grid (1,). Triton refuses any block
#   over TRITON_MAX_TENSOR_NUMEL = 1,048,576 elements when it builds the kernel (installed
#   triton/_utils.py: TRITON_MAX_TENSOR_NUMEL = 1048576 and validate_block_shape's "numel (...) exceeds triton
#   maximum tensor numel"; documented in source). The CPU trials stay under it (l1_relu at most 3 x 16,384 = 49,152 elements in
#   the wide trial), so the interpreter and the sm_90 front-end check both pass; at the GPU timing shape
#   (timing_shapes.json: 4096 x 16384 = 67M elements) the block is 2^26 and the kernel does not compile.
#   Same family as a04 (a launch configuration that grows with the input, checked only at the CPU's sizes).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(1,)](x, out, n, BLOCK_SIZE=triton.next_power_of_2(n))
        return out
