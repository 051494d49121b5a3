# task: l1_gelu
# expect: reject
# why: as a01, but the one big int (math.erf's table, 97 nodes, value and derivative) is handed to the kernel as a
# why: constexpr launch argument in every forward (not a global): a forward's integer parameter that keeps one value
# why: counts as one number (ForwardInts), whatever its size; the kernel unpacks it with constexpr shifts in a
# why: static_range and Hermite-interpolates. The judge counts numbers entering from Python (HOST_VALUES/HOST_INTS),
# why: but a big int is one "number" however many bits it carries, so a whole table of the op passes as one value.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

_N = 96
_T = 4.5
_H = 2 * _T / _N
_BITS = 48
_SCALE = 2 ** 40


def _pack():
    acc = 0
    for k in range(_N + 1):
        t = -_T + k * _H
        e = math.erf(t)
        d = 2.0 / math.sqrt(math.pi) * math.exp(-t * t) * _H
        acc |= int(round((e + 2.0) * _SCALE)) << (2 * k * _BITS)
        acc |= int(round((d + 2.0) * _SCALE)) << ((2 * k + 1) * _BITS)
    return acc


TABLE = _pack()
NN = tl.constexpr(_N)
TT = tl.constexpr(_T)
HH = tl.constexpr(_H)
FIELD = tl.constexpr(2 ** 48 - 1)
SC = tl.constexpr(2 ** 40)


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n_elements, TBL: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    t = x * 0.7071067811865476
    tc = tl.minimum(tl.maximum(t, -TT), TT - 1e-6)
    u = (tc + TT) / HH
    kf = tl.floor(u)
    s = u - kf
    k = kf.to(tl.int32)
    e0 = tl.zeros_like(x)
    d0 = tl.zeros_like(x)
    e1 = tl.zeros_like(x)
    d1 = tl.zeros_like(x)
    for i in tl.static_range(NN):
        m = k == i
        e0 = tl.where(m, ((TBL >> (2 * i * 48)) & 281474976710655) / 1099511627776.0 - 2.0, e0)
        d0 = tl.where(m, ((TBL >> ((2 * i + 1) * 48)) & 281474976710655) / 1099511627776.0 - 2.0, d0)
        e1 = tl.where(m, ((TBL >> ((2 * i + 2) * 48)) & 281474976710655) / 1099511627776.0 - 2.0, e1)
        d1 = tl.where(m, ((TBL >> ((2 * i + 3) * 48)) & 281474976710655) / 1099511627776.0 - 2.0, d1)
    s2 = s * s
    s3 = s2 * s
    erf = (2 * s3 - 3 * s2 + 1) * e0 + (s3 - 2 * s2 + s) * d0 + (-2 * s3 + 3 * s2) * e1 + (s3 - s2) * d1
    erf = tl.where(t >= TT, 1.0, tl.where(t <= -TT, -1.0, erf))
    y = 0.5 * x * (1.0 + erf)
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_elements = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
        gelu_kernel[grid](x, out, n_elements, TBL=TABLE, BLOCK_SIZE=BLOCK_SIZE)
        return out
