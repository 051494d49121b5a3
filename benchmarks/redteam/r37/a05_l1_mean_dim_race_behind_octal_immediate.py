# expect: reject
# task: l1_mean_dim
# class: CPU cross-check evasion: valid PTX whose immediate crashes the CPU emulation with a plain ValueError
# idea: r36 a02's unordered finalizer behind one identity instruction, `mul.lo.s32 $0, $1, 01;`. PTX integer
#   literals follow C: a leading 0 means octal (PTX ISA, "Constants": octal literal 0[0-7]+), so 01 is 1 and the
#   instruction is the identity on the float's bits; ptxas accepts it. child/ptx.py parses the literal with
#   Python's int(text, 0), which raises ValueError ("invalid literal for int() with base 0: '01'") instead of
#   InterpreterUnsupported: if that surfaces as a runtime_error of the candidate (not cpu_unsupported), the
#   cross-check sees neither memory evidence nor an unfinished run, and the GPU verdict stands.
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
    x = tl.inline_asm_elementwise("mul.lo.s32 $0, $1, 01;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
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
