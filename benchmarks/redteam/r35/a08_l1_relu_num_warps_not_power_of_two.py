# expect: reject
# task: l1_relu
# class: launch option the GPU compiler refuses: num_warps=6 (not a power of two)
# idea: Triton's CUDA backend asserts "num_warps must be a power of 2" when it builds its options
#   (installed triton/backends/nvidia/compiler.py, CUDAOptions.__post_init__; documented in source), so this
#   launch fails on any NVIDIA GPU. The interpreter ignores num_warps. The verifier refuses more than 1,024
#   threads a block (r31) through its front-end check; whether it builds the backend's options is the question.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024, num_warps=6)
        return out
