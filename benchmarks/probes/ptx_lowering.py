"""What a GPU runs for the Triton operations the CPU interpreter has to imitate, read from the PTX this Triton emits.

    PYTHONPATH=src python benchmarks/probes/ptx_lowering.py               # sm_90 (the judging H100/H200), no GPU needed
    PYTHONPATH=src python benchmarks/probes/ptx_lowering.py --arch 80 --ptx k.ptx

Triton compiles for a target without a device (``triton.compile`` with a ``GPUTarget``; ``ptxas`` ships with it), so
the instruction behind ``tl.exp``, ``tl.sqrt``, a float32 cast to fp8, ``tl.clamp`` or a float32 ``tl.atomic_add``
can be read here. Its semantics are the PTX ISA's (``.ftz``: subnormal inputs and results flushed to a zero of their
sign; ``.satfinite``: out-of-range values to the largest finite one). ``verify/child/fidelity.py`` cites what this
prints (2026-12-01, Triton 3.9: ``ex2.approx.f32`` for ``tl.exp``, ``ex2.approx.ftz.f32`` for ``tl.exp2``,
``sqrt.approx.ftz.f32``, ``rsqrt.approx.ftz.f32``, ``cvt.rn.satfinite.e5m2x2.f32`` and ``.e4m3x2``,
``min.xorsign.abs.f32`` for a symmetric ``tl.clamp``, ``atom.global.gpu.acq_rel.add.f32``, ``div.full.f32`` for a
float32 division, ``max.f32``/``min.f32`` for ``tl.maximum``/``tl.minimum``, ``mul.f32`` without ``.ftz``: plain
arithmetic keeps subnormals). A value is still a measurement's to confirm on a GPU
(``benchmarks/redteam/r33/tools/gpu_tells.py``); the GPU machine's Triton 3.6 may lower differently.
"""

from __future__ import annotations

import argparse
import os
import re

os.environ.pop("TRITON_INTERPRET", None)  # the compiler, not the interpreter

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def operations(x, y, e5, e4, added, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    tl.store(y + offs, tl.exp(v))
    tl.store(y + BLOCK + offs, tl.exp2(v))
    tl.store(y + 2 * BLOCK + offs, tl.sqrt(v))
    tl.store(y + 3 * BLOCK + offs, tl.clamp(v, -1.0, 1.0))
    tl.store(e5 + offs, v.to(tl.float8e5))
    tl.store(e4 + offs, v.to(tl.float8e4nv))
    tl.atomic_add(added + offs, v)
    w = tl.load(x + BLOCK + offs)
    tl.store(y + 4 * BLOCK + offs, v / w)
    tl.store(y + 5 * BLOCK + offs, tl.math.rsqrt(v))
    tl.store(y + 6 * BLOCK + offs, tl.log(v))
    tl.store(y + 7 * BLOCK + offs, tl.sin(v) + tl.cos(w))
    tl.store(y + 8 * BLOCK + offs, tl.maximum(v, w) + tl.minimum(v, 0.0))


INSTRUCTIONS = r"(ex2\S*|lg2\S*|sqrt\S*|rsqrt\S*|div\S*|rcp\S*|sin\S*|cos\S*|cvt\S*e[45]m[23]\S*|min\S*|max\S*|atom\S*|red\.\S*)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--arch", type=int, default=90, help="compute capability, e.g. 90 (sm_90), 80")
    parser.add_argument("--ptx", help="also write the whole PTX here")
    args = parser.parse_args()
    signature = {"x": "*fp32", "y": "*fp32", "e5": "*fp8e5", "e4": "*fp8e4nv", "added": "*fp32", "BLOCK": "constexpr"}
    compiled = triton.compile(ASTSource(operations, signature, constexprs={"BLOCK": 128}),
                              target=GPUTarget("cuda", args.arch, 32))
    ptx = compiled.asm["ptx"]
    if args.ptx:
        with open(args.ptx, "w") as fh:
            fh.write(ptx)
    print(f"Triton {triton.__version__}, sm_{args.arch}:")
    for name in sorted(set(re.findall(INSTRUCTIONS, ptx))):
        print(f"  {name}")


if __name__ == "__main__":
    main()
