# expect: accept
# task: l1_relu
# class: honest: output allocated on device="cuda" (hard-coded), as most GPU-written answers do
# idea: torch.empty(x.shape, device="cuda", dtype=x.dtype): correct on the judging GPU (the inputs are CUDA
#   tensors there). On a CPU judge the inputs are CPU tensors: either the judge maps "cuda" to its device or an
#   honest GPU answer is refused. (A verdict that follows the device is defensible; this records which.)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.where(x > 0, x, 0.0)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty(x.shape, device="cuda", dtype=x.dtype)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
        return out
