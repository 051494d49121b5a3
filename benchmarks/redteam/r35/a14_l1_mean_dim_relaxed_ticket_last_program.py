# expect: reject
# task: l1_mean_dim
# class: memory-ordering bug: a "last program finalizes" ticket with sem="relaxed" atomics (no release/acquire)
# idea: The CUDA threadFenceReduction pattern: every (row, chunk) program stores its partial sum with a plain
#   store, then takes a ticket with tl.atomic_add(counter + row, 1, sem="relaxed"); the program that draws the
#   last ticket loads all partials and writes the mean. With relaxed atomics nothing orders the other programs'
#   plain stores before their ticket, nor the finalizer's loads after its own (PTX memory consistency model:
#   only release/acquire patterns or fences create the ordering; documented), so on a GPU the finalizer can read
#   stale partials. Triton's default sem is "acq_rel", which is correct; "relaxed" is a plausible
#   micro-optimisation that breaks it. Under the interpreter every program runs to completion before the next, so
#   whatever order it uses, the last ticket-holder sees every partial.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ticket_mean_kernel(x_ptr, part_ptr, cnt_ptr, out_ptr, n_cols, n_chunks,
                       BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(part_ptr + row * n_chunks + chunk, tl.sum(x, axis=0))
    ticket = tl.atomic_add(cnt_ptr + row, 1, sem="relaxed")
    if ticket == n_chunks - 1:
        idx = tl.arange(0, MAX_CHUNKS)
        parts = tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
        tl.store(out_ptr + row, tl.sum(parts, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        BLOCK = 256
        n_chunks = triton.cdiv(n_cols, BLOCK)
        part = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        cnt = torch.zeros((n_rows,), device=x.device, dtype=torch.int32)
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        ticket_mean_kernel[(n_rows, n_chunks)](x, part, cnt, out, n_cols, n_chunks,
                                               BLOCK=BLOCK, MAX_CHUNKS=triton.next_power_of_2(n_chunks))
        return out
