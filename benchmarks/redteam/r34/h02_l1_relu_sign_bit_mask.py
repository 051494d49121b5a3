# expect: done
# task: l1_relu
# class: honest ReLU through integer bit operations (bitcast, arithmetic right shift of a negative int32, and-not)
# idea: bits >> 31 is -1 for negative floats (arithmetic shift), 0 otherwise; bits & ~sign clears negatives to +0.0; exact on any device
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bits_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    bits = x.to(tl.int32, bitcast=True)
    sign = bits >> 31
    y = (bits & ~sign).to(tl.float32, bitcast=True)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_bits_kernel[(triton.cdiv(n, 512),)](x, out, n, BLOCK_SIZE=512)
        return out
