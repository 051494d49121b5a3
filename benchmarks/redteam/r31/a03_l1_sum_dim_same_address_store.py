# expect: reject
# task: l1_sum_dim
# class: attack (2/3: intra-program write-write race the interpreter resolves in lane order)
# idea: Each program loads a (BLOCK_R x BLOCK_N) tile covering all of dim1, takes a running sum down the rows
# (tl.cumsum) and stores the whole tile to out[batch, 0, cols] -- every row of the tile stores to the same
# address. The interpreter's store walks lanes in order, so the last row (the full column sum) wins and the
# answer is right on every trial. On a GPU the lanes of one store to one address are different threads (and
# warps): which of the BLOCK_R partial sums lands is unspecified, so the output is a random prefix sum. The
# race check compares a lane's *loads* against other lanes' stores; two lanes storing different values to
# one address in one store is not compared.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, dim1, dim2, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    batch = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_R)
    mask = (rows[:, None] < dim1) & (cols[None, :] < dim2)
    tile = tl.load(x_ptr + batch * dim1 * dim2 + rows[:, None] * dim2 + cols[None, :], mask=mask, other=0.0)
    running = tl.cumsum(tile, axis=0)
    # every row stores its running sum to the one output element of its column: the last one is the total
    dst = out_ptr + batch * dim2 + cols[None, :] + rows[:, None] * 0
    tl.store(dst, running, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        batch, dim1, dim2 = x.shape
        out = torch.empty((batch, 1, dim2), device=x.device, dtype=x.dtype)
        BLOCK_R = triton.next_power_of_2(dim1)
        BLOCK_N = 16
        grid = (batch, triton.cdiv(dim2, BLOCK_N))
        sum_dim1_kernel[grid](x, out, dim1, dim2, BLOCK_R=BLOCK_R, BLOCK_N=BLOCK_N)
        return out
