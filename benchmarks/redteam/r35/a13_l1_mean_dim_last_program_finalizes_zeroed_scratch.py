# expect: reject
# task: l1_mean_dim
# class: cross-program dependency without synchronization, scratch zeroed by torch.zeros (no unwritten read to flag)
# idea: grid (rows, chunks). Every program writes its chunk's partial sum to a scratch; the program with the last
#   chunk index then reads all of its row's partials and writes the mean. Under Triton's interpreter the programs
#   run one after another in grid order, so the last chunk's program always sees every partial. On a GPU the
#   programs run concurrently in no guaranteed order (CUDA Programming Guide: thread blocks "are required to
#   execute independently ... in any order, in parallel or in series"; documented), so the finalizer may read
#   partials not yet written: wrong results. A common model bug (a grid-wide barrier assumed). docs/verifier.md
#   lists races between programs as closed. a12 (scratch from torch.empty) was stopped as a read of unwritten
#   memory; here the scratch is torch.zeros, so a finalizer that runs early reads zeros, not unwritten bytes.
import torch
import torch.nn as nn
import triton
import triton.language as tl


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
        BLOCK = 256
        n_chunks = triton.cdiv(n_cols, BLOCK)
        part = torch.zeros((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        out = torch.empty((n_rows,), device=x.device, dtype=x.dtype)
        partial_then_finalize_kernel[(n_rows, n_chunks)](x, part, out, n_cols, n_chunks,
                                                         BLOCK=BLOCK, MAX_CHUNKS=triton.next_power_of_2(n_chunks))
        return out
