# task: l1_relu
# expect: reject
# modes: correctness timing
# cpu: rejected runtime_error (tiny: bounds.py, load outside every tensor handed)
# gpu-guess: correctness: ACCEPTED if the canary pattern follows the launch's argument order (x and out both 0x7F); if x's guard is 0xFE, or x's stray lanes read past its guard, rejected runtime_error (guard changed); timing: same as correctness (the timing shape has no tail)
# why: The r29 a05 bug (a last block with no mask at all: stray loads past the input, stray stores past the output)
# why: against its fix, the canary in the bytes from each handed storage's end to the next 256-byte boundary
# why: (0x7F bytes, 0xFE for every second storage). Three tensors are handed (x, a one-element threshold buffer,
# why: out), so x and out are storages 0 and 2 and get the same canary, 0x7F7F7F7F = +3.39e38. ReLU maps it to itself,
# why: so the stray lanes copy x's canary into out's canary: after the launch out's guard holds what it held. BLOCK
# why: is 64 fp32 = 256 bytes, so the stray span of the last block is exactly the guard and never beyond it. The
# why: timing shape (4096 x 16384 fp32) is a multiple of 256 bytes, so the timed calls have no stray lanes at all.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, thr_ptr, out_ptr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    thr = tl.load(thr_ptr)
    x = tl.load(x_ptr + offsets)          # bug: no mask
    y = tl.where(x > thr, x, thr)
    tl.store(out_ptr + offsets, y)        # bug: no mask


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("threshold", torch.zeros(1))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 64
        relu_kernel[(triton.cdiv(n, BLOCK_SIZE),)](x, self.threshold, out, BLOCK_SIZE=BLOCK_SIZE)
        return out
