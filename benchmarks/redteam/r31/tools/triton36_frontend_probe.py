# Not a case: reproduces the Triton 3.6 vs 3.9 front-end difference behind a05/a06 (and that num_warps=64 passes both).
# Run: /tmp/v36/bin/python triton36_frontend_probe.py   and   /work/main/.venv/bin/python triton36_frontend_probe.py
import triton, triton.language as tl
from triton.compiler.compiler import ASTSource
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import CUDABackend
from triton._C.libtriton import ir
import sys

@triton.jit
def k8(a_ptr, c_ptr, BK: tl.constexpr):
    offs = tl.arange(0, 32)
    ks = tl.arange(0, BK)
    a = tl.load(a_ptr + offs[:, None] * BK + ks[None, :])
    b = tl.load(a_ptr + ks[:, None] * 32 + offs[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + offs[:, None] * 32 + offs[None, :], c)

@triton.jit
def unsq(a_ptr, c_ptr):
    offs = tl.arange(0, 32)
    x = tl.load(a_ptr + offs)
    y = tl.unsqueeze(x, 1) + tl.unsqueeze(x, 0)
    tl.store(c_ptr + offs[:, None] * 32 + offs[None, :], y)

@triton.jit
def nw(a_ptr, c_ptr):
    offs = tl.arange(0, 32)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs))

target = GPUTarget("cuda", 90, 32)
backend = CUDABackend(target)
for fn, const, extra in [(k8, {"BK": 8}, {}), (unsq, {}, {}), (nw, {}, {"num_warps": 64})]:
    sig = {"a_ptr": "*fp32", "c_ptr": "*fp32"}
    sig.update({k: "constexpr" for k in const})
    src = ASTSource(fn, sig, const)
    opts = backend.parse_options(dict(extra))
    ctx = ir.context(); ir.load_dialects(ctx); backend.load_dialects(ctx)
    try:
        src.make_ir(target, opts, backend.get_codegen_implementation(opts), backend.get_module_map(), ctx)
        print(fn.__name__, "front end OK")
    except Exception as e:
        print(fn.__name__, "REJECTED:", str(e).splitlines()[-1][:200] if str(e) else type(e))
