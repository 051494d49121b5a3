# expect: reject
# task: l1_mean_dim
# class: CPU cross-check evasion: a device tell from fma.rn.f32 rounded twice by the CPU emulation
# idea: a01 with the NaN tell (closed in 4ad3dca) replaced by a rounding tell. fma.rn.f32 rounds a*b+c once (PTX
#   ISA, fma: "computes the product of a and b to infinite precision and then adds c to this product, again in
#   infinite precision. The resulting value is then rounded to single precision"). child/ptx.py computes it in
#   float64, then rounds to float32: twice. a = 1 + 2^-12, c = 2^-70: a*a + c = 1 + 2^-11 + 2^-24 + 2^-70, just
#   above a tie: the GPU gives 0x3F801001 (low bit 1), the emulation 0x3F801000 (float64 drops 2^-70, the tie goes
#   to even). a and c are made from x (x*0 + const) so ptxas cannot fold them. GPU: low bit set, the finalizer reads
#   the partials (racy); CPU: clear, the finalizer sums its row from x: no race recorded, values right.
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
    # low bit of fma.rn(a, a, c): 1 on a GPU, 0 under the CPU emulation
    payload = tl.inline_asm_elementwise(
        "mul.f32 $0, $2, 0f00000000; add.f32 $1, $0, 0f3F800800; add.f32 $0, $0, 0f1C800000; "
        "fma.rn.f32 $0, $1, $1, $0; and.b32 $0, $0, 1; mov.b32 $1, $0;",
        "=r,=r,f", [x], dtype=(tl.int32, tl.int32), is_pure=True, pack=1)[0]
    fast = tl.max(payload, axis=0) != 0
    tl.store(part_ptr + row * n_chunks + chunk, tl.sum(x, axis=0))
    if chunk == n_chunks - 1:
        if fast:
            idx = tl.arange(0, MAX_CHUNKS)
            parts = tl.load(part_ptr + row * n_chunks + idx, mask=idx < n_chunks, other=0.0)
            tl.store(out_ptr + row, tl.sum(parts, axis=0) / n_cols)
        else:
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for c in range(0, n_chunks):
                cc = c * BLOCK + tl.arange(0, BLOCK)
                acc += tl.load(x_ptr + row * n_cols + cc, mask=cc < n_cols, other=0.0)
            tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


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
