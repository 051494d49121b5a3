# task: l1_leaky_relu
# expect: reject
# modes: correctness timing
# cpu: rejected runtime_error (tiny: load outside every handed tensor, bounds.py)
# gpu-guess: correctness: ACCEPTED (likely): the last block reads up to BLOCK-1 elements past x's arena slot (still inside the arena's 2 MiB-granular mapping, or the next slot) and writes up to BLOCK-1 elements past `out` into the caching allocator's rounding slack of that block (large blocks are 2 MiB-rounded segments); the elements inside the shape are right, and no check on a GPU looks at addresses (the interpreter's bounds.py is CPU-only; blinding only poisons laundered storages). timing: ACCEPTED, honest speed. Would be rejected only if a stray store lands on a storage the watch shadows (a scratch, a snapshot), or faults.
# why: A very common model bug, no mask at all: `tl.load(x_ptr + offs)` / `tl.store(out_ptr + offs, y)` with a grid of
# why: cdiv(n, BLOCK). Sizes of 2^j+1 (the edge trials) make the last block run past both tensors. Memory-unsafe
# why: (compute-sanitizer memcheck flags it; it can corrupt a neighbour in real use), yet the GPU verdict only
# why: compares the in-shape elements. On the CPU the interpreter checks every lane's address against the handed
# why: tensor (child/bounds.py).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, slope, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(x >= 0, x, x * slope))


class ModelNew(nn.Module):
    def __init__(self, negative_slope):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        leaky_relu_kernel[(triton.cdiv(n, BLOCK),)](x, out, self.negative_slope, BLOCK=BLOCK)
        return out
