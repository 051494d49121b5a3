# expect: done
# task: l1_relu
# class: honest: ReLU under @triton.autotune with two block sizes keyed on n
# idea: the tutorial pattern; every config writes the same output, so the verifier's run-every-config rule agrees.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
    key=["n"],
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out
