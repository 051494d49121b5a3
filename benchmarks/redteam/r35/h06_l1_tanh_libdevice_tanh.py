# expect: done
# task: l1_tanh
# class: honest kernel, common construct: tanh from Triton's libdevice wrapper
# idea: `from triton.language.extra import libdevice; libdevice.tanh(x)` is the usual way to get tanh in
#   Triton 3.x (it calls CUDA's __nv_tanhf on a GPU). The docs say the interpreter shims run libdevice
#   through numpy; a plain honest elementwise kernel should be accepted.
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, libdevice.tanh(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        tanh_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
