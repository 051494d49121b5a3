"""The op catalog of the task generator: each op as PyTorch text (for ``Model``) and Triton text (for ``ModelNew``).

An op's ``name`` is its token in a task's op-combination signature (constants are not part of it). Templates use
``{x}`` for the value, ``{c}``/``{lo}``/``{hi}`` for constants and ``{p}`` for a per-feature parameter (PyTorch:
``self.p0``; Triton: the row-broadcast vector loaded as ``p0``). Row reductions carry a Triton block that computes
``y`` from the row ``x`` (masked by ``mask``, ``n_cols`` valid columns) and say whether they keep the row's shape.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    """An elementwise op. ``vector``: uses a per-feature parameter broadcast over rows."""

    name: str
    torch: str
    triton: str
    consts: tuple = ()       # choices for {c}, or (lo, hi) pairs for clamp
    vector: bool = False


@dataclass(frozen=True)
class OpUse:
    """An op with its constants drawn; ``param`` names its parameter (vector ops)."""

    op: Op
    const: object = None
    param: str | None = None

    def _fill(self, template: str, x: str, param_ref: str) -> str:
        values = {"x": x, "p": param_ref}
        if isinstance(self.const, tuple):
            values.update(lo=repr(self.const[0]), hi=repr(self.const[1]))
        elif self.const is not None:
            values["c"] = repr(self.const)
        return template.format(**values)

    def torch_expr(self, x: str = "x") -> str:
        return self._fill(self.op.torch, x, f"self.{self.param}")

    def triton_expr(self, x: str = "x") -> str:
        return self._fill(self.op.triton, x, str(self.param))


ELEMENTWISE = (
    Op("relu", "torch.relu({x})", "tl.maximum({x}, 0.0)"),
    Op("sigmoid", "torch.sigmoid({x})", "1.0 / (1.0 + tl.exp(-{x}))"),
    Op("tanh", "torch.tanh({x})", "2.0 / (1.0 + tl.exp(-2.0 * {x})) - 1.0"),
    Op("silu", "torch.nn.functional.silu({x})", "{x} / (1.0 + tl.exp(-{x}))"),
    Op("gelu", "torch.nn.functional.gelu({x})", "0.5 * {x} * (1.0 + tl.math.erf({x} * 0.7071067811865476))"),
    Op("softplus", "torch.nn.functional.softplus({x})", "tl.where({x} > 20.0, {x}, tl.log(1.0 + tl.exp({x})))"),
    Op("abs", "torch.abs({x})", "tl.abs({x})"),
    Op("square", "{x} * {x}", "{x} * {x}"),
    Op("add", "{x} + {c}", "{x} + {c}", consts=(-1.0, -0.5, 0.25, 0.5, 1.0, 2.0)),
    Op("mul", "{x} * {c}", "{x} * {c}", consts=(-2.0, -0.5, 0.5, 1.5, 2.0, 3.0)),
    Op("clamp", "torch.clamp({x}, min={lo}, max={hi})", "tl.minimum(tl.maximum({x}, {lo}), {hi})",
       consts=((-1.0, 1.0), (-0.5, 0.5), (0.0, 2.0), (-2.0, 0.5))),
    Op("leaky_relu", "torch.nn.functional.leaky_relu({x}, negative_slope={c})", "tl.where({x} > 0, {x}, {x} * {c})",
       consts=(0.01, 0.1, 0.2)),
    Op("bias", "{x} + {p}", "{x} + {p}", vector=True),
    Op("scale", "{x} * {p}", "{x} * {p}", vector=True),
)
BY_NAME = {op.name: op for op in ELEMENTWISE}


@dataclass(frozen=True)
class Reduction:
    """A reduction over each row (dim=1): ``torch`` on the whole tensor, ``triton`` lines computing ``y``."""

    name: str
    torch: str
    triton: tuple[str, ...]
    keeps_shape: bool


_MASKED_MAX = "m = tl.max(tl.where(mask, x, -float('inf')), axis=0)"
REDUCTIONS = (
    Reduction("sum", "torch.sum({x}, dim=1, keepdim=True)", ("y = tl.sum(tl.where(mask, x, 0.0), axis=0)",), False),
    Reduction("mean", "torch.mean({x}, dim=1, keepdim=True)",
              ("y = tl.sum(tl.where(mask, x, 0.0), axis=0) / n_cols",), False),
    Reduction("max", "torch.amax({x}, dim=1, keepdim=True)", ("y = tl.max(tl.where(mask, x, -float('inf')), axis=0)",),
              False),
    Reduction("logsumexp", "torch.logsumexp({x}, dim=1, keepdim=True)",
              (_MASKED_MAX, "y = m + tl.log(tl.sum(tl.where(mask, tl.exp(x - m), 0.0), axis=0))"), False),
    Reduction("softmax", "torch.softmax({x}, dim=1)",
              (_MASKED_MAX, "e = tl.where(mask, tl.exp(x - m), 0.0)", "y = e / tl.sum(e, axis=0)"), True),
    Reduction("l2norm", "{x} / torch.sqrt(torch.sum({x} * {x}, dim=1, keepdim=True) + 1e-6)",
              ("xs = tl.where(mask, x, 0.0)", "y = x / tl.sqrt(tl.sum(xs * xs, axis=0) + 1e-6)"), True),
    Reduction("rmsnorm", "{x} / torch.sqrt(torch.mean({x} * {x}, dim=1, keepdim=True) + 1e-5)",
              ("xs = tl.where(mask, x, 0.0)", "y = x / tl.sqrt(tl.sum(xs * xs, axis=0) / n_cols + 1e-5)"), True),
    Reduction("layernorm", "torch.nn.functional.layer_norm({x}, ({x}.shape[1],), eps=1e-5)",
              ("mu = tl.sum(tl.where(mask, x, 0.0), axis=0) / n_cols",
               "d = tl.where(mask, x - mu, 0.0)",
               "y = (x - mu) / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + 1e-5)"), True),
)


def draw_ops(rng: random.Random, count: int, allow_vector: bool, first_param: int = 0) -> list[OpUse]:
    """``count`` elementwise ops, no op twice in a row; vector ops get parameters p{first_param}, p{...}."""
    uses: list[OpUse] = []
    params = first_param
    pool = [op for op in ELEMENTWISE if allow_vector or not op.vector]
    for _ in range(count):
        choices = [op for op in pool if not uses or op.name != uses[-1].op.name]
        op = rng.choice(choices)
        const = rng.choice(op.consts) if op.consts else None
        param = None
        if op.vector:
            param, params = f"p{params}", params + 1
        uses.append(OpUse(op, const, param))
    return uses
