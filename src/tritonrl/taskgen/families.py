"""Task families of the generator: each draws ops and shapes, and writes a task module and its Triton reference.

* ``ew``: an elementwise chain of 2-5 ops (constants, per-feature parameters broadcast over rows) on (batch, dim):
  one flat fused kernel.
* ``row``: an optional elementwise prologue, a row reduction (sum, mean, max, logsumexp, softmax, l2norm, rmsnorm,
  layernorm) and 0-2 epilogue ops: one program per row.
* ``gemm``: ``nn.Linear`` then 1-3 epilogue ops: a tiled ``tl.dot`` kernel with the epilogue fused.

The task text follows KernelBench (``Model``, module-level shape constants, ``get_inputs``, ``get_init_inputs``),
so ``tritonrl.tasks.variants`` can shrink and perturb it; the kernels mask every load, so any shape works.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tritonrl.taskgen.catalog import REDUCTIONS, OpUse, draw_ops

FAMILIES = ("ew", "row", "gemm")
FAMILY_WEIGHTS = (0.4, 0.35, 0.25)
HEADER = '"""Generated task (tritonrl tasks generate): {what}."""\n\nimport torch\nimport torch.nn as nn\n'
SOLUTION_HEADER = ('"""Reference solution (tritonrl tasks generate): {what}."""\n\n'
                   "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n")


@dataclass(frozen=True)
class Draft:
    """One generated task before verification: its family, op signature, and both sources."""

    family: str
    ops: tuple[str, ...]
    source: str
    solution: str
    level: int

    @property
    def signature(self) -> str:
        """The op combination, constants and shapes left out: what the train/held-out split is keyed on."""
        return f"{self.family}:{'>'.join(self.ops)}"


def draw(rng: random.Random, shape_scale: int = 1) -> Draft:
    family = rng.choices(FAMILIES, FAMILY_WEIGHTS)[0]
    return {"ew": _elementwise, "row": _row, "gemm": _gemm}[family](rng, max(1, shape_scale))


# ---------------------------------------------------------------- shared text
def _params(uses: list[OpUse], size: str) -> list[str]:
    return [f"        self.{u.param} = nn.Parameter(torch.randn({size}))" for u in uses if u.param]


def _model(init_args: str, init_lines: list[str], body: list[str], constants: dict[str, int],
           inputs: str, init_inputs: str, what: str) -> str:
    init = [f"    def __init__(self{init_args}):", "        super().__init__()", *init_lines]
    forward = ["    def forward(self, x):", *(f"        {line}" for line in body), "        return x"]
    consts = "\n".join(f"{name} = {value}" for name, value in constants.items())
    return (HEADER.format(what=what) + "\n\nclass Model(nn.Module):\n" + "\n".join(init) + "\n\n"
            + "\n".join(forward) + f"\n\n\n{consts}\n\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
            f"def get_init_inputs():\n    return [{init_inputs}]\n")


def _model_new(init_args: str, init_lines: list[str], forward: list[str]) -> str:
    init = [f"    def __init__(self{init_args}):", "        super().__init__()", *init_lines]
    return ("\n\nclass ModelNew(nn.Module):\n" + "\n".join(init) + "\n\n    def forward(self, x):\n"
            + "\n".join(f"        {line}" for line in forward) + "\n")


def _torch_lines(uses: list[OpUse]) -> list[str]:
    return [f"x = {u.torch_expr('x')}" for u in uses]


def _triton_lines(uses: list[OpUse], var: str, indent: str = "    ") -> list[str]:
    return [f"{indent}{var} = {u.triton_expr(var)}" for u in uses]


def _param_ptrs(uses: list[OpUse]) -> tuple[str, str]:
    """(kernel parameters ``p0_ptr, ``..., call arguments ``self.p0, ``...)."""
    names = [u.param for u in uses if u.param]
    return "".join(f"{n}_ptr, " for n in names), "".join(f"self.{n}, " for n in names)


def _sizes(rng: random.Random, choices: tuple[int, ...], scale: int) -> int:
    return rng.choice(choices) * scale


def _describe(names: list[str]) -> str:
    return " -> ".join(names)


# ---------------------------------------------------------------- families
def _elementwise(rng: random.Random, scale: int) -> Draft:
    uses = draw_ops(rng, rng.randint(2, 5), allow_vector=True)
    has_params = any(u.param for u in uses)
    what = f"elementwise {_describe([u.op.name for u in uses])} on (batch_size, dim)"
    constants = {"batch_size": _sizes(rng, (8, 16, 24, 32), scale), "dim": _sizes(rng, (32, 48, 64, 96, 128), scale)}
    init_args = ", dim" if has_params else ""
    source = _model(init_args, _params(uses, "dim"), _torch_lines(uses), constants,
                    "torch.randn(batch_size, dim)", "dim" if has_params else "", what)
    ptrs, args = _param_ptrs(uses)
    loads = [f"    {u.param} = tl.load({u.param}_ptr + cols, mask=mask, other=0.0)" for u in uses if u.param]
    kernel = ["", "", "@triton.jit",
              f"def fused_kernel(x_ptr, {ptrs}out_ptr, n_elements, n_cols, BLOCK_SIZE: tl.constexpr):",
              "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
              "    mask = offs < n_elements", "    cols = offs % n_cols",
              "    x = tl.load(x_ptr + offs, mask=mask, other=0.0)", *loads, *_triton_lines(uses, "x"),
              "    tl.store(out_ptr + offs, x, mask=mask)"]
    forward = ["x = x.contiguous()", "out = torch.empty_like(x)", "n_elements = x.numel()", "BLOCK_SIZE = 256",
               "grid = (triton.cdiv(n_elements, BLOCK_SIZE),)",
               f"fused_kernel[grid](x, {args}out, n_elements, x.shape[1], BLOCK_SIZE=BLOCK_SIZE)", "return out"]
    solution = (SOLUTION_HEADER.format(what="one fused elementwise kernel") + "\n".join(kernel) + "\n"
                + _model_new(init_args, _params(uses, "dim"), forward))
    return Draft("ew", tuple(u.op.name for u in uses), source, solution, level=2)


def _row(rng: random.Random, scale: int) -> Draft:
    reduction = rng.choice(REDUCTIONS)
    pre = draw_ops(rng, rng.choice((0, 0, 1)), allow_vector=True)
    post = draw_ops(rng, rng.randint(0, 2), allow_vector=reduction.keeps_shape, first_param=len(pre))
    uses = pre + post
    has_params = any(u.param for u in uses)
    names = [u.op.name for u in pre] + [reduction.name] + [u.op.name for u in post]
    what = f"row-wise {_describe(names)} on (batch_size, dim)"
    constants = {"batch_size": _sizes(rng, (8, 16, 32), scale), "dim": _sizes(rng, (32, 64, 100, 128, 200), scale)}
    init_args = ", dim" if has_params else ""
    body = _torch_lines(pre) + [f"x = {reduction.torch.format(x='x')}"] + _torch_lines(post)
    source = _model(init_args, _params(uses, "dim"), body, constants, "torch.randn(batch_size, dim)",
                    "dim" if has_params else "", what)
    ptrs, args = _param_ptrs(uses)
    loads = [f"    {u.param} = tl.load({u.param}_ptr + cols, mask=mask, other=0.0)" for u in uses if u.param]
    store = ("    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)" if reduction.keeps_shape
             else "    tl.store(out_ptr + row, y)")
    kernel = ["", "", "@triton.jit", f"def row_kernel(x_ptr, {ptrs}out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):",
              "    row = tl.program_id(0)", "    cols = tl.arange(0, BLOCK_SIZE)", "    mask = cols < n_cols",
              "    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)", *loads,
              *_triton_lines(pre, "x"), *(f"    {line}" for line in reduction.triton), *_triton_lines(post, "y"),
              store]
    out = "torch.empty_like(x)" if reduction.keeps_shape else "torch.empty((batch, 1), device=x.device, dtype=x.dtype)"
    forward = ["x = x.contiguous()", "batch, n_cols = x.shape", f"out = {out}",
               f"row_kernel[(batch,)](x, {args}out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))",
               "return out"]
    solution = (SOLUTION_HEADER.format(what="one program per row, the whole row in one block") + "\n".join(kernel)
                + "\n" + _model_new(init_args, _params(uses, "dim"), forward))
    return Draft("row", tuple(names), source, solution, level=1 if not uses else 2)


def _gemm(rng: random.Random, scale: int) -> Draft:
    uses = draw_ops(rng, rng.randint(1, 3), allow_vector=True)
    names = ["linear"] + [u.op.name for u in uses]
    what = f"{_describe(names)} on (batch_size, in_features) -> (batch_size, out_features)"
    constants = {"batch_size": _sizes(rng, (8, 16, 32), scale), "in_features": _sizes(rng, (16, 32, 48, 64), scale),
                 "out_features": _sizes(rng, (16, 32, 48, 64), scale)}
    init_args = ", in_features, out_features"
    init_lines = ["        self.linear = nn.Linear(in_features, out_features)", *_params(uses, "out_features")]
    source = _model(init_args, init_lines, ["x = self.linear(x)", *_torch_lines(uses)], constants,
                    "torch.randn(batch_size, in_features)", "in_features, out_features", what)
    ptrs, args = _param_ptrs(uses)
    loads = [f"    {u.param} = tl.load({u.param}_ptr + offs_n, mask=mask_n, other=0.0)[None, :]"
             for u in uses if u.param]
    kernel = ["", "", "@triton.jit",
              f"def linear_kernel(x_ptr, w_ptr, b_ptr, {ptrs}out_ptr, M, N, K,",
              "                  stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,",
              "                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):",
              "    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)",
              "    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)",
              "    offs_k = tl.arange(0, BLOCK_K)", "    mask_m = offs_m < M", "    mask_n = offs_n < N",
              "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)", "    for k0 in range(0, K, BLOCK_K):",
              "        ks = k0 + offs_k",
              "        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :] * stride_xk,",
              "                    mask=mask_m[:, None] & (ks[None, :] < K), other=0.0)",
              "        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None] * stride_wk,",
              "                    mask=mask_n[None, :] & (ks[:, None] < K), other=0.0)",
              "        acc += tl.dot(a, w, input_precision=\"ieee\")",
              "    x = acc + tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)[None, :]", *loads,
              *_triton_lines(uses, "x"),
              "    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, x,",
              "             mask=mask_m[:, None] & mask_n[None, :])"]
    forward = ["x = x.contiguous()", "w = self.linear.weight", "M, K = x.shape", "N = w.shape[0]",
               "out = torch.empty((M, N), device=x.device, dtype=x.dtype)", "BLOCK_M, BLOCK_N, BLOCK_K = 32, 32, 32",
               "grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))",
               f"linear_kernel[grid](x, w, self.linear.bias, {args}out, M, N, K,",
               "                    x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), out.stride(1),",
               "                    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)", "return out"]
    solution = (SOLUTION_HEADER.format(what="a tiled tl.dot GEMM with the epilogue fused") + "\n".join(kernel) + "\n"
                + _model_new(init_args, init_lines, forward))
    return Draft("gemm", tuple(names), source, solution, level=2)
