# expect: reject
# task: l1_mean_dim
# class: CPU cross-check evasion: the racy path runs only at the GPU's moved shapes, never at full0's
# idea: An occupancy heuristic a model writes often: with many rows, one program per row (race-free); with few
#   long rows (n_rows < 48 and n_cols >= 1024), each row is split into chunks and the program with the last chunk
#   index finalizes the mean from its siblings' partials with no order between programs (r35 a13's race: CUDA C++
#   Programming Guide, Thread Hierarchy: blocks "execute independently ... in any order, in parallel or in
#   series"; nothing makes the siblings' stores visible to the finalizer). The task's own shape (64 x 1500) and
#   the tiny variant take the race-free path; the GPU judge's moved shapes (full1/full4 edge 33 x 1025, full3
#   32 x 1024, docs/verifier.md "Trials") take the racy one, and pass there when the blocks happen to finish in
#   order (r35 a12-a14 did on an H200). The CPU cross-check runs one full trial, full0 at the task's shape, so it
#   never executes the racy path: no memory evidence, the GPU verdict stands.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_mean_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


@triton.jit
def partial_then_finalize_kernel(x_ptr, part_ptr, out_ptr, n_cols, n_chunks,
                                 BLOCK: tl.constexpr, MAX_CHUNKS: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    cols = chunk * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(part_ptr + row * n_chunks + chunk, tl.sum(x, axis=0))
    if chunk == n_chunks - 1:
        idx = tl.arange(0, MAX_CHUNKS)
        parts = tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
        tl.store(out_ptr + row, tl.sum(parts, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        n_rows, n_cols = x.shape
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        if n_rows >= 48 or n_cols < 1024:
            row_mean_kernel[(n_rows,)](x, out, n_cols, BLOCK=512)
            return out
        BLOCK = 256
        n_chunks = triton.cdiv(n_cols, BLOCK)
        part = torch.zeros((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        partial_then_finalize_kernel[(n_rows, n_chunks)](x, part, out, n_cols, n_chunks,
                                                         BLOCK=BLOCK, MAX_CHUNKS=triton.next_power_of_2(n_chunks))
        return out
