# task: l1_sum_dim
# expect: done
# modes: correctness timing
# cpu: rejected timeout (full2: a program waiting on one the interpreter has not run yet spins until the 60 s limit; tiny/full0/full1 passed)
# gpu-guess: correctness: accepted (each column strip's chunks add in a fixed order c = 0, 1, 2, ...: deterministic and race-free; a waiting program has a higher linear block id than the one it waits for, so the one it waits for was dispatched first and is resident or done: the forward-progress assumption of stream-K and decoupled look-back). timing: accepted, honest speed (more parallelism on the 1024-row reduction).
# why: Honest and unusual: split-K over dim1 with a serialized, ordered accumulation instead of atomics (bit-for-bit
# why: reproducible sums). Program (j, c) sums rows [c*CHUNK, (c+1)*CHUNK) of strip j, waits with an acquire atomic
# why: until flag[j] == c, adds into out (chunk 0 stores), then releases flag[j] = c + 1. The CPU interpreter runs
# why: programs one at a time in a shuffled order, so a program that waits on one not yet run spins forever (or is
# why: called a race): the docs list "a correct spin-wait on another program is reported as a race" as a limit.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_chunk_ordered_kernel(x_ptr, out_ptr, flag_ptr, dim1, dim2, n_strips_per_batch, CHUNK,
                             BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    j = tl.program_id(0)          # strip: (batch, column block)
    c = tl.program_id(1)          # chunk of dim1
    batch = j // n_strips_per_batch
    cols = (j % n_strips_per_batch) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < dim2
    base = x_ptr + batch * dim1 * dim2
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    r_lo = c * CHUNK
    for r0 in range(0, CHUNK, BLOCK_R):
        rows = r_lo + r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < dim1) & (rows[:, None] < r_lo + CHUNK) & col_mask[None, :]
        acc += tl.sum(tl.load(base + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0), axis=0)
    dst = out_ptr + batch * dim2 + cols
    if c == 0:
        tl.store(dst, acc, mask=col_mask)
    else:
        while tl.atomic_add(flag_ptr + j, 0, sem="acquire") != c:
            pass
        prev = tl.load(dst, mask=col_mask, other=0.0)
        tl.store(dst, prev + acc, mask=col_mask)
    tl.debug_barrier()  # every warp's stores done before the release
    tl.atomic_xchg(flag_ptr + j, c + 1, sem="release")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.empty((batch, 1, dim2), device=x.device, dtype=x.dtype)
        BLOCK_R, BLOCK_N = 32, 64
        CHUNK = 256
        strips = triton.cdiv(dim2, BLOCK_N)
        chunks = triton.cdiv(dim1, CHUNK)
        flags = torch.zeros(batch * strips, device=x.device, dtype=torch.int32)
        grid = (batch * strips, chunks)
        sum_chunk_ordered_kernel[grid](x, out, flags, dim1, dim2, strips, CHUNK, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return out
