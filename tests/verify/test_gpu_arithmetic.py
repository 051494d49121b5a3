"""The interpreter's float results as a GPU gives them, where a kernel could read the difference (the thirty-seventh
red team): every NaN an operation makes or passes on is the canonical one (float32 ``0x7FFFFFFF``; numpy's is x86's
``0xFFC00000``), and an fp32 fma is rounded once. A kernel branching on either ran a race-free path on the CPU and a
racy one on a GPU (``integrity/r37_*``)."""

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")

SCRIPT = r"""
import torch, triton, triton.language as tl
from tritonrl.verify.child.interpreter import install_interpreter_compat
install_interpreter_compat()


@triton.jit
def bits_kernel(x_ptr, o_ptr, f_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    inf = tl.full([BLOCK], float("inf"), tl.float32)
    tl.store(o_ptr + offs, ((x * 0.0 + inf) - inf).to(tl.int32, bitcast=True))  # made by a subtraction
    tl.store(o_ptr + BLOCK + offs, tl.sqrt(x - 10.0).to(tl.int32, bitcast=True))  # by a square root
    tl.store(o_ptr + 2 * BLOCK + offs, tl.sum(x * 0.0 + inf - inf, axis=0).to(tl.int32, bitcast=True) + offs * 0)
    payload = tl.full([BLOCK], 0x7FC00001, tl.int32).to(tl.float32, bitcast=True)  # a NaN from integer bits
    tl.store(o_ptr + 3 * BLOCK + offs, payload.to(tl.int32, bitcast=True))  # kept: nothing operated on it
    tl.store(o_ptr + 4 * BLOCK + offs, (payload + x).to(tl.int32, bitcast=True))  # passed on by an addition
    a = tl.full([BLOCK], 1.000244140625, tl.float32)  # 1 + 2^-12
    tl.store(f_ptr + offs, tl.fma(a, a, tl.full([BLOCK], 2.0 ** -70, tl.float32)))


import numpy
numpy.seterr(invalid="ignore")  # a candidate's own setting: each launch sets the judge's again
x = torch.ones(4)
o = torch.zeros(20, dtype=torch.int32)
f = torch.zeros(4)
bits_kernel[(1,)](x, o, f, BLOCK=4)
print("BITS", " ".join(hex(v & 0xFFFFFFFF) for v in o.tolist()[::4]), hex(f.view(torch.int32)[0].item()))
"""


def test_nans_are_canonical_and_fma_rounds_once_under_the_interpreter(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": SRC, "CUDA_VISIBLE_DEVICES": ""}
    script = tmp_path / "bits.py"  # a file: the GPU front end reads a kernel's source
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("BITS ")), None)
    assert line is not None, proc.stderr[-3000:]
    made, root, reduced, kept, passed, fma = line.split()[1:]
    assert (made, root, reduced) == ("0x7fffffff",) * 3  # x86 gave 0xffc00000
    assert kept == "0x7fc00001" and passed == "0x7fffffff"
    assert fma == "0x3f801001"  # rounded twice: 0x3f801000
