"""Compile a06's kernel for sm_90 with the local Triton (no GPU needed) and show what precedes the ticket's atom."""
import importlib.util, sys, re
import triton
from triton.backends.compiler import GPUTarget
spec = importlib.util.spec_from_file_location("a06", sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
k = m.ticket_mean_kernel
src = triton.compiler.ASTSource(fn=k, signature={"x_ptr": "*fp32", "part_ptr": "*fp32", "cnt_ptr": "*i32", "out_ptr": "*fp32",
      "n_cols": "i32", "n_chunks": "i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 256})
c = triton.compile(src, target=GPUTarget("cuda", 90, 32))
ptx = c.asm["ptx"].splitlines()
i = next(j for j, l in enumerate(ptx) if "atom" in l)
print(triton.__version__); print("\n".join(l for l in ptx[max(0, i - 14): i + 3] if not l.strip().startswith(".loc")))
