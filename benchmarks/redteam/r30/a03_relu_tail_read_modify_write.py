# task: l1_relu
# expect: reject
# modes: correctness timing
# cpu: rejected runtime_error (tiny: UnsetRead, the output's fresh bytes loaded)
# gpu-guess: correctness: ACCEPTED (guard bytes written back unchanged; loads unchecked); timing: ACCEPTED (a small risk of an illegal-address fault if an output ends at the end of a mapped segment)
# why: A masked store written by hand: the kernel loads the output's old bytes over the whole last block (no mask)
# why: and stores where(mask, y, old), also with no mask. Past the end of the output it reads and writes memory it
# why: does not own (a real bug: an out-of-bounds access, and a lost update if anything else writes there, e.g. a
# why: neighbour allocation written by another stream or a concurrent kernel). The guards past each storage compare
# why: bytes only: the stray lanes write back exactly the canary they read, so the guard is unchanged whatever its
# why: pattern (no dependence on which storage gets 0x7F or 0xFE). Inside the output, the lanes read the fresh
# why: allocation (poison) and overwrite it, which a GPU cannot see (no load is checked there).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    old = tl.load(out_ptr + offsets)                 # bug: reads past the output
    y = tl.where(mask, tl.maximum(x, 0.0), old)
    tl.store(out_ptr + offsets, y)                   # bug: writes past the output (the same bytes back)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 256
        relu_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, out, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
