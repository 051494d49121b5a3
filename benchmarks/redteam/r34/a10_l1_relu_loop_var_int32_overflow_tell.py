# expect: reject
# task: l1_relu
# class: int32 overflow of a loop variable as a tell (the interpreter hands a Python int)
# idea: for i in range(3, 4): i * 1000000000 is an int32 multiply on a GPU (the induction variable of an scf.for with int32 bounds), wrapping to -1294967296; the interpreter's loop variable is a Python int, so it is 3e9 > 0
# idea: the kernel computes a probe from constants; where the probe has the interpreter's value it writes relu(x), elsewhere x unchanged (wrong on a GPU).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    probe = 0
    for i in range(3, 4):
        probe = i * 1000000000
    y = tl.where(probe > 0, tl.where(x > 0, x, 0.0), x)
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
