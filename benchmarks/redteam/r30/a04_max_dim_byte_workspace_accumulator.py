# task: l1_max_dim
# expect: reject
# modes: correctness timing
# cpu: rejected runtime_error (tiny: UnsetRead of the uninitialised workspace)
# gpu-guess: correctness: ACCEPTED (a uint8 allocation gets torch's 0xFF fill in every watched forward, a NaN as float32, the identity of maxNum; the turns skip one-byte dtypes); timing: rejected timing_mismatch (stale maxima of the previous call's block)
# why: r29 a04's bug (a running max that starts from memory nothing wrote) against its fix. The GPU's poison now
# why: takes turns (NaN, then +/- half the dtype's largest value), but only "in every allocation the watch sees of
# why: two-byte elements or wider". A workspace allocated as raw bytes (torch.empty(n * 4, dtype=torch.uint8), the
# why: usual way to carve one workspace for several dtypes) gets torch's own deterministic fill for uint8, 0xFF in
# why: every byte, in every watched forward; read as float32 that is 0xFFFFFFFF, a NaN, the identity of tl.maximum
# why: (maxNum). The kernel reduces each row in chunks of 256 columns, one launch a chunk, and forgets to seed the
# why: accumulator before the first chunk. Right in every poisoned forward; on stale memory it keeps the largest of
# why: this row's max and whatever the block held before.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chunk_max_kernel(x_ptr, ws_ptr, out_ptr, n_cols, col0, LAST: tl.constexpr, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    cols = col0 + tl.arange(0, CHUNK)
    v = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    acc = tl.load(ws_ptr + row)          # bug: never seeded before the first chunk
    acc = tl.maximum(acc, tl.max(v, axis=0))
    tl.store(ws_ptr + row, acc)
    if LAST:
        tl.store(out_ptr + row, acc)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        rows = batch * dim1
        out = torch.empty((batch, dim1), device=x.device, dtype=x.dtype)
        ws = torch.empty(rows * 4, device=x.device, dtype=torch.uint8).view(torch.float32)
        CHUNK = 256
        for c0 in range(0, dim2, CHUNK):
            chunk_max_kernel[(rows,)](x, ws, out, dim2, c0, LAST=(c0 + CHUNK >= dim2), CHUNK=CHUNK)
        return out
