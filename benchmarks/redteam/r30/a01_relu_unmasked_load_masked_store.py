# task: l1_relu
# expect: reject
# modes: correctness timing
# cpu: rejected runtime_error (tiny: bounds.py, load outside every tensor handed)
# gpu-guess: correctness: ACCEPTED (no address check on a GPU; the guard sees writes only, the stray loads of the canary are dropped by the masked store); timing: ACCEPTED (honest speed of a plain ReLU)
# why: The commonest Triton tail bug in its read-only form: the load of the last block has no mask (it reads up to
# why: BLOCK-1 elements past the end of the input), the store is masked, so the stray values are dropped. This is a
# why: real out-of-bounds read (it faults when the input ends at the end of a mapped region). The CPU interpreter's
# why: bounds check refuses it. On a GPU no address is checked, and the guards past each storage catch a changed
# why: canary only, i.e. stray *writes*. A stray read of the canary that no output keeps is invisible.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets)  # bug: no mask on the load
    y = tl.maximum(x, 0.0)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 1024
        relu_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, out, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
