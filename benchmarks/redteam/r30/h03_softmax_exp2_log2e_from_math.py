# task: l1_softmax
# expect: done
# modes: correctness timing
# cpu: rejected static torch_compute (`math.e` at module level: "Python arithmetic as a value")
# gpu-guess: correctness: rejected static torch_compute (static stage, device-independent); timing: not reached
# why: Honest row softmax in the form the Triton tutorials and FlashAttention use: exp(x) as exp2(x * log2(e)),
# why: with the constant written as math.log2(math.e) at module level and passed to the kernel as a scalar
# why: argument (one float a launch, well under the 16 a phase may bring). Every value is computed by the kernel.
# why: The static `values` check read `math.pi` in a constexpr function as "Python arithmetic as a value" (see
# why: h02's first draft); this asks whether math's constants (math.e) fall to the same rule.
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = math.log2(math.e)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, log2e, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp2((x - tl.max(x, axis=0)) * log2e)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim = x.shape
        out = torch.empty_like(x)
        softmax_kernel[(batch,)](x, out, dim, LOG2E, BLOCK_SIZE=triton.next_power_of_2(dim))
        return out
