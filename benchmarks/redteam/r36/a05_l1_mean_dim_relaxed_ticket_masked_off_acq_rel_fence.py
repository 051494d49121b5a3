# expect: reject
# task: l1_mean_dim
# class: release/acquire ordering credited to an atomic that never executes (every lane masked off)
# idea: r35 a14 (a "last program finalizes" ticket taken with sem="relaxed": nothing orders the siblings' partial
#   stores before the finalizer's loads; PTX ISA, Memory Consistency Model: only release/acquire patterns or fences
#   order them) plus, around the ticket, an acq_rel atomic_add of 0 on the same counter whose mask is false in
#   every lane (chunk < 0). A masked-off lane performs no memory operation on a GPU (Triton lowers each lane of an
#   atomic to a predicated `atom`; triton.language.atomic_add: "mask: if mask[idx] is false, do not perform the
#   atomic operation at address pointer[idx]"), so it releases and acquires nothing and the kernel is as racy as
#   a14. Accepted here if the race check counts the masked atomic's sem as a release/acquire on the location.
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
    never = chunk < 0
    tl.atomic_add(cnt_ptr + row, 0, mask=never, sem="acq_rel")
    ticket = tl.atomic_add(cnt_ptr + row, 1, sem="relaxed")
    tl.atomic_add(cnt_ptr + row, 0, mask=never, sem="acq_rel")
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
