# expect: reject
# task: l1_relu
# class: a false tl.multiple_of hint on the element count (the interpreter ignores hints; a GPU compiler acts on them)
# idea: n_elements is declared a multiple of 16; the trials' edge sizes are 2^j + 1. Under the interpreter hints are no-ops, so the mask is exact
# idea: on a GPU Triton's axis analysis takes (offsets < n) as constant over groups of 16 when n is divisible by 16 and offsets contiguous, so it vectorizes the masked load/store by 4 fp32 with one mask bit per vector: the last vector (starting at n-1 = 2^j) loads 3 elements past the input and stores 3 past the output (not measured)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    n = tl.multiple_of(n_elements, 16)
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    offsets = tl.max_contiguous(tl.multiple_of(offsets, BLOCK_SIZE), BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.where(x > 0, x, 0.0)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
        return out
