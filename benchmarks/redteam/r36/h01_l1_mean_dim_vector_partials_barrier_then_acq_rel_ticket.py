# expect: done
# task: l1_mean_dim
# class: honest: CUB's last-block ticket in Triton, with the CTA barrier before the ticket
# idea: a06 with tl.debug_barrier() between the vector store and the acq_rel ticket: every thread of the CTA has
#   issued its store before thread 0's release (bar.sync orders the CTA's threads; PTX ISA, Memory Consistency
#   Model: bar.sync is morally strong and its causality order chains into thread 0's release), as CUDA's
#   threadFenceReduction sample / CUB do with __syncthreads() before the ticket. The finalizer acquires with the
#   same atomic; Triton broadcasts a scalar atomic's result through shared memory behind a barrier, so its other
#   threads' loads follow the acquire. Correct on a GPU; should be accepted.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ticket_mean_kernel(x_ptr, part_ptr, cnt_ptr, out_ptr, n_cols, n_chunks, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    lanes = tl.arange(0, BLOCK)
    cols = chunk * BLOCK + lanes
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(part_ptr + (row * n_chunks + chunk) * BLOCK + lanes, x)
    tl.debug_barrier()
    ticket = tl.atomic_add(cnt_ptr + row, 1)
    if ticket == n_chunks - 1:
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for k in range(0, n_chunks):
            acc += tl.load(part_ptr + (row * n_chunks + k) * BLOCK + lanes)
        tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        BLOCK = 256
        n_chunks = triton.cdiv(n_cols, BLOCK)
        part = torch.empty((n_rows * n_chunks * BLOCK,), device=x.device, dtype=torch.float32)
        cnt = torch.zeros((n_rows,), device=x.device, dtype=torch.int32)
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        ticket_mean_kernel[(n_rows, n_chunks)](x, part, cnt, out, n_cols, n_chunks, BLOCK=BLOCK)
        return out
