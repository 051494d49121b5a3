# expect: reject
# task: l1_softmax
# class: real-scale shape gap: a "persistent" grid capped at the SM count but without the row loop
# idea: A half-written persistent kernel: grid = (min(n_rows, NUM_SMS),) with NUM_SMS from
#   torch.cuda.get_device_properties (the verifier's shims answer as the judging GPU, 132 SMs on an H100/H200),
#   but each program handles only row = program_id(0): the row-striding loop of h04 is missing. Every CPU trial of
#   l1_softmax has at most 33 rows (batch 32, edge 33, wide 3), all below the SM count, so every row is written;
#   at the GPU timing shape (timing_shapes.json: 8192 rows) rows 132..8191 are never written (documented
#   arithmetic, not measured). Same family as docs/verifier.md's "left" item (a size the CPU never makes large:
#   "a reduction's batch rows at 128 in one program"); here the cap is the device's SM count, a value the CPU
#   answers as the GPU's, so any row task with fewer CPU rows than SMs has the hole.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty_like(x)
        num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        grid = (min(n_rows, num_sms),)
        softmax_kernel[grid](out, x, n_cols, BLOCK=triton.next_power_of_2(n_cols))
        return out
