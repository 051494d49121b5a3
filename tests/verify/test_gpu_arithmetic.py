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


def _printed(tmp_path, name: str, script: str, tag: str) -> str:
    """What ``script`` (run under the interpreter in a fresh process, from a file: the GPU front end reads a
    kernel's source) printed after ``tag``."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": SRC, "CUDA_VISIBLE_DEVICES": ""}
    path = tmp_path / name
    path.write_text(script)
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(tag + " ")), None)
    assert line is not None, proc.stderr[-3000:]
    return line.split(" ", 1)[1]


def test_nans_are_canonical_and_fma_rounds_once_under_the_interpreter(tmp_path):
    made, root, reduced, kept, passed, fma = _printed(tmp_path, "bits.py", SCRIPT, "BITS").split()
    assert (made, root, reduced) == ("0x7fffffff",) * 3  # x86 gave 0xffc00000
    assert kept == "0x7fc00001" and passed == "0x7fffffff"
    assert fma == "0x3f801001"  # rounded twice: 0x3f801000


APPROX_SCRIPT = r"""
import json
import numpy, torch, triton, triton.language as tl
from tritonrl.verify.child.interpreter import install_interpreter_compat
install_interpreter_compat()


@triton.jit
def approx_kernel(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(o_ptr + offs, tl.exp(x))
    tl.store(o_ptr + BLOCK + offs, x / y)
    tl.store(o_ptr + 2 * BLOCK + offs, tl.div_rn(x, y))
    tl.store(o_ptr + 3 * BLOCK + offs, tl.sqrt(y))
    tl.store(o_ptr + 4 * BLOCK + offs, tl.sqrt_rn(y))
    tl.store(o_ptr + 5 * BLOCK + offs, tl.exp2(x))


n = 1024
x = torch.linspace(-87.0, 88.0, n)
y = torch.linspace(0.37, 1000.0, n)
outs = []
for _ in range(2):
    o = torch.zeros(6 * n)
    approx_kernel[(1,)](x, y, o, BLOCK=n)
    outs.append(o.view(torch.int32).tolist())
print("APPROX", json.dumps({"x": x.tolist(), "y": y.tolist(), "first": outs[0], "again": outs[1]}))
"""


def _ulps(a, b):
    import numpy as np

    return np.abs(np.asarray(a, dtype=np.int64) - np.asarray(b, dtype=np.int64))


def test_triton_approximate_operations_are_the_gpus_instructions_rounded_faithfully(tmp_path):
    """``tl.exp`` is ``ex2.approx.f32`` of ``x * log2(e)`` rounded to float32 (the product's rounding moves
    exp(80) by many units in the last place from the exact value numpy gave); ``/``, ``tl.sqrt`` and ``tl.exp2``
    (``div.full``, ``sqrt.approx``, ``ex2.approx``) are rounded faithfully, so they are not ``div_rn``/``sqrt_rn``
    in every lane (a CPU-only tell, like r37's ``a06`` in PTX); the same input gives the same bits twice."""
    import json

    import numpy as np

    data = json.loads(_printed(tmp_path, "approx.py", APPROX_SCRIPT, "APPROX"))
    assert data["first"] == data["again"]  # a function of the input within a process, as a GPU's
    n = len(data["x"])
    x, y = np.array(data["x"], dtype=np.float32), np.array(data["y"], dtype=np.float32)
    out = np.array(data["first"], dtype=np.int32).reshape(6, n)
    exp, div, div_rn, sqrt, sqrt_rn, exp2 = (row.view(np.float32) for row in out)
    scaled = (x.astype(np.float64) * float(np.array(0x3FB8AA3B, dtype=np.uint32).view(np.float32))).astype(np.float32)
    gpu_exp = np.exp2(scaled.astype(np.float64)).astype(np.float32)
    assert _ulps(exp.view(np.int32), gpu_exp.view(np.int32)).max() <= 1  # ex2 of the rounded product
    numpy_exp = np.exp(x.astype(np.float64)).astype(np.float32)
    assert _ulps(exp.view(np.int32), numpy_exp.view(np.int32)).max() > 8  # far from exp's exact rounding
    assert div_rn.tobytes() == (x.astype(np.float64) / y).astype(np.float32).tobytes()
    assert sqrt_rn.tobytes() == np.sqrt(y.astype(np.float64)).astype(np.float32).tobytes()
    for approx, exact in ((div, div_rn), (sqrt, sqrt_rn)):
        ulps = _ulps(approx.view(np.int32), exact.view(np.int32))
        assert ulps.max() == 1 and 0.2 < (ulps == 1).mean() < 0.8
    ulps = _ulps(exp2.view(np.int32), np.exp2(x.astype(np.float64)).astype(np.float32).view(np.int32))
    assert ulps.max() <= 1 and (ulps == 1).any()


MEMORY_NAN_SCRIPT = r"""
import torch, triton, triton.language as tl
from tritonrl.verify.child.interpreter import install_interpreter_compat
install_interpreter_compat()


@triton.jit
def atomic_nan_kernel(acc_ptr, v_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(acc_ptr + offs, tl.load(v_ptr + offs))


@triton.jit
def payload_kernel(s_ptr, x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(s_ptr + offs, tl.full([BLOCK], 0x7FC00001, tl.int32))
    tl.debug_barrier()
    f = tl.load(s_ptr.to(tl.pointer_type(tl.float32)) + offs)
    tl.store(o_ptr + offs, f)
    tl.store(o_ptr + BLOCK + offs, f + tl.load(x_ptr + offs))


acc = torch.tensor([float("inf"), 1.0, float("nan"), 2.0])
acc.view(torch.int32)[2] = 0x7FC00005  # a NaN of other bits in memory, added to
atomic_nan_kernel[(1,)](acc, torch.tensor([float("-inf"), 1.0, 1.0, 0.5]), BLOCK=4)
o = torch.zeros(8)
payload_kernel[(1,)](torch.zeros(4, dtype=torch.int32), torch.ones(4), o, BLOCK=4)
print("BITS", " ".join(hex(v & 0xFFFFFFFF) for v in acc.view(torch.int32).tolist() + o.view(torch.int32).tolist()[::4]))
"""


def test_nans_memory_holds_become_canonical_where_a_gpu_operates_on_them(tmp_path):
    """A float32 atomic add that makes a NaN (inf + -inf) or adds to one leaves the canonical NaN in memory, as a
    GPU's does (the interpreter's C++ add left x86's 0xFFC00000, or the payload); a NaN payload stored as an integer
    and loaded as a float through another pointer type keeps its bits until an operation, whose result is then
    canonical (numpy passed it on)."""
    made, two, added_to, sum_, loaded, passed = _printed(tmp_path, "memory_nan.py", MEMORY_NAN_SCRIPT, "BITS").split()
    assert (made, added_to) == ("0x7fffffff", "0x7fffffff")  # were 0xffc00000 and 0x7fc00005
    assert (two, sum_) == ("0x40000000", "0x40200000")  # 1 + 1, 2 + 0.5: numbers as they were
    assert loaded == "0x7fc00001" and passed == "0x7fffffff"  # a load keeps the bits; the add does not
