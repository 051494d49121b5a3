# expect: reject
# task: l1_relu
# class: attack: lanes pass values to their neighbours through one cell with a vector atomic_xchg (lane i gets lane i-1's value)
# idea: each program seeds a one-word cell with x[base] (scalar store, barrier), then every lane exchanges
#   x[base + i + 1] into that cell and keeps what it got back: in lane order lane i receives x[base + i], an
#   exact ReLU. On a GPU the same-address exchanges of a block are served in no specified order (warps run
#   independently), so lanes get other lanes' values. Exchanges of different values into one location by lanes
#   of one program are the within-program form of what the race check flags across programs.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, cell_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = pid * BLOCK
    tl.store(cell_ptr + pid, tl.load(x_ptr + base))
    tl.debug_barrier()
    i = tl.arange(0, BLOCK)
    offs = base + i
    mask = offs < n
    nxt = tl.load(x_ptr + offs + 1, mask=(offs + 1) < n, other=0.0)
    got = tl.atomic_xchg(cell_ptr + pid + i * 0, nxt, mask=mask)
    tl.store(out_ptr + offs, tl.where(got > 0, got, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK = 1024
        grid = triton.cdiv(n, BLOCK)
        cell = torch.empty(grid, dtype=x.dtype, device=x.device)
        relu_kernel[(grid,)](x, cell, out, n, BLOCK=BLOCK)
        return out
