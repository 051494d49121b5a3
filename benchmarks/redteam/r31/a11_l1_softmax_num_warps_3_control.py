# expect: reject
# task: l1_softmax
# class: attack (3: interpreter runs what a GPU refuses) -- control for a01
# idea: The same softmax as a01 with num_warps=3 (not a power of two): Triton's CUDAOptions refuses it at
# compile time on a GPU. The verifier's front-end check builds the options and catches it; a01's num_warps=64
# passes the options check but exceeds CUDA's 1024 threads per block at launch, which nothing models.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(batch,)](x, out, dim, BLOCK_SIZE=triton.next_power_of_2(dim), num_warps=3)
        return out
