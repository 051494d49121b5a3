# task: l1_gelu
# expect: reject
# modes: correctness timing
# cpu: ACCEPTED (done, reward 1.0)
# gpu-guess: correctness: ACCEPTED; timing: ACCEPTED (likely no speed credit)
# why: a07's hole one level down: the erf table (Python's math.erf at import) is the default of tuple constexpr
# why: parameters of a @triton.jit *helper*, which the kernel calls with x alone. Neither the kernel's launch
# why: arguments nor any global that the kernel or its helper names holds a number; the front end binds the
# why: helper's defaults while it compiles (CPU: at every launch, inside the interpreter's call of the helper).
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl

ERF_T = tuple(math.erf((-6.0 + i * 0.125) / 1.4142135623730951) for i in range(97))
DERF_T = tuple(0.7978845608028654 * math.exp(-(-6.0 + i * 0.125) ** 2 / 2.0) for i in range(97))


@triton.jit
def erf_interp(x, E: tl.constexpr = ERF_T, D: tl.constexpr = DERF_T):
    xc = tl.minimum(tl.maximum(x, -6.0), 6.0)
    idx = ((xc + 6.0) * 8.0 + 0.5).to(tl.int32)
    xi = idx.to(tl.float32) * 0.125 - 6.0
    d = xc - xi
    e = tl.zeros_like(x)
    d1 = tl.zeros_like(x)
    for i in tl.static_range(97):
        sel = idx == i
        e = tl.where(sel, E[i], e)
        d1 = tl.where(sel, D[i], d1)
    d2 = -xi * d1
    d3 = (xi * xi - 1.0) * d1
    erfv = e + d * (d1 + d * (0.5 * d2 + d * (d3 / 6.0)))
    return tl.where(x > 6.0, 1.0, tl.where(x < -6.0, -1.0, erfv))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = 0.5 * x * (1.0 + erf_interp(x))
    tl.store(out_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        gelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
