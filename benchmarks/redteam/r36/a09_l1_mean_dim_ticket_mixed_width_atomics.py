# expect: reject
# task: l1_mean_dim
# class: release/acquire credited between atomics of different widths on one address
# idea: r26_i8's last-program ticket (acq_rel, scalar partials), except that programs of even chunk index take
#   the ticket with a 64-bit atomic on the row's int64 counter and programs of odd index with a 32-bit atomic on
#   its low half (the same address, little-endian; counts stay far below 2^32, so both read the same count).
#   PTX ISA, Memory Consistency Model: two operations are "morally strong" relative to each other only if, among
#   other things, they overlap completely (same bytes); atomicity and the release/acquire synchronization
#   (release pattern -> acquire pattern) are defined only between morally strong operations. A 32-bit and a
#   64-bit atomic on one address are not, so a finalizer whose ticket was drawn at one width is not ordered
#   after a sibling who released at the other (and the two read-modify-writes are not even atomic with respect to
#   each other). Racy on a GPU; accepted here if the race check matches release and acquire by address alone.
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
    if chunk % 2 == 0:
        ticket = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel").to(tl.int32)
    else:
        low = (cnt_ptr + row).to(tl.pointer_type(tl.int32))
        ticket = tl.atomic_add(low, 1, sem="acq_rel")
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
        cnt = torch.zeros((n_rows,), device=x.device, dtype=torch.int64)
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        ticket_mean_kernel[(n_rows, n_chunks)](x, part, cnt, out, n_cols, n_chunks,
                                               BLOCK=BLOCK, MAX_CHUNKS=triton.next_power_of_2(n_chunks))
        return out
