# expect: accept
# task: l1_relu
# class: honest: GPU-written host code (torch.cuda.synchronize() after the launch, a stream-ordered launch)
# idea: LLM-written and tutorial host code often synchronizes after a launch; on a GPU it is harmless. The CPU
#   judge (CPU-only torch) must answer torch.cuda.synchronize() as the judging GPU would, or refuse honest code.
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
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE)
        torch.cuda.synchronize()
        return out
