# task: l1_relu
# expect: reject
# why: the first forward raises torch.OutOfMemoryError (a claim: nothing ran out) after launching its kernel; every
# why: later forward is honest. On the CPU nothing is retried, so the claim should fail the trial it is raised in.
# why: A judge that retried on the candidate's word would give it a second chance. Reject.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, tl.maximum(x, 0.0), mask=m)


_calls = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        _calls.append(1)
        if len(_calls) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return out
