# expect: reject
# task: l1_mean_dim
# class: CPU cross-check evasion: a race between programs in a kernel the interpreter cannot run (inline PTX)
# idea: r35 a13 (every (row, chunk) program stores its partial to a zeroed scratch; the program with the last chunk
#   index loads all of its row's partials with no order: a race by CUDA's contract, "thread blocks are required to
#   execute independently ... in any order" (CUDA C++ Programming Guide, Thread Hierarchy)), plus one harmless
#   identity move in inline PTX (tl.inline_asm_elementwise, "mov.b32 $0, $1;"). On a GPU the move is a no-op and
#   the race is exposed only when a finalizer outruns a sibling (r35 a12-a14 passed every trial on an H200). On
#   the CPU the interpreter cannot execute PTX, so the CPU judge fails the candidate on the construct, not on memory
#   evidence, and the cross-check leaves the GPU's verdict standing (docs/verifier.md: "a construct only a GPU
#   runs ... leaves the GPU's verdict as it is").
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
    x = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
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
