# task: l1_gelu
# expect: done
# modes: correctness timing
# cpu: rejected output_not_written (tiny: 80 constexpr-function coefficients counted as a table of Python numbers); the first draft with math.pi was rejected static torch_compute
# gpu-guess: correctness: rejected output_not_written (the coefficients are counted where the kernel compiles and in every later launch); timing: not reached
# why: Honest GELU: erf by its Maclaurin series, evaluated by Horner's rule in float64 inside the kernel (|x| <= 4.5;
# why: beyond, erf = sign(x) to 2e-10). The 80 coefficients 2/sqrt(pi) (-1)^k / (k! (2k+1)) are standard constants,
# why: written as a @triton.constexpr_function of k instead of 80 literals. Every value of the op is computed by the
# why: kernel, per element. A judge that counts what constexpr functions return as "numbers brought from Python"
# why: (HOST_VALUES = 16 per phase; r25/r29's table fixes) cannot tell coefficients from a table of the op.
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.constexpr_function
def erf_coef(k: int) -> float:
    return 1.1283791670955126 * (-1.0) ** k / (math.factorial(k) * (2 * k + 1))  # 2/sqrt(pi)


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, TERMS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    z = (x * 0.7071067811865476).to(tl.float64)
    z = tl.minimum(tl.maximum(z, -4.5), 4.5)
    t = z * z
    acc = tl.zeros_like(z)
    for j in tl.static_range(TERMS):
        acc = acc * t + erf_coef(TERMS - 1 - j)
    erfv = (z * acc).to(tl.float32)
    erfv = tl.where(x > 6.3, 1.0, tl.where(x < -6.3, -1.0, erfv))
    y = 0.5 * x * (1.0 + erfv)
    tl.store(out_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        gelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024, TERMS=80)
        return out
