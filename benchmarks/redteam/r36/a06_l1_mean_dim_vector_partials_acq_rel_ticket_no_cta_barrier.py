# expect: reject
# task: l1_mean_dim
# class: release/acquire credited to a whole program where a GPU releases only one thread's stores
# idea: Each (row, chunk) program stores its chunk as a BLOCK-wide vector of lane partials (a plain tl.store: on a
#   GPU each element is written by a different thread of the CTA), then takes a scalar ticket with
#   tl.atomic_add(cnt, 1) (default sem acq_rel); the program drawing the last ticket loads every sibling's vector
#   and writes the mean. The CPU race check treats "the writer made a release atomic after its store" per program.
#   On a GPU a scalar atomic is executed by one thread; a release orders only that thread's own prior accesses
#   (PTX ISA, Memory Consistency Model: the release pattern / causality order is per thread; CUDA's
#   threadFenceReduction sample and CUB's last-block pattern put __syncthreads() before thread 0's ticket for this
#   reason). Triton's NVIDIA backend inserted no CTA barrier before a release atomic until triton-lang/triton PR
#   #10816 "[BACKEND] Insert CTA barriers for atomic memory semantics" (merged 2026-07-08; its example is exactly
#   `tl.store(); tl.atomic(..., "release")`), so on a Triton without it (the judging H200's 3.6 predates it) the
#   finalizer may read another CTA's lanes before they land: racy, yet almost always right in practice.
#   The honest form is h01 (tl.debug_barrier() before the ticket).
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
