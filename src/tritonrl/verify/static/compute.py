"""The strict torch-compute check: high-level PyTorch compute on ModelNew's forward path instead of Triton.

On the forward path (``scope.forward_path``) it rejects ``torch.*`` calls outside ``ALLOWED_TORCH``, ``F.*``,
numpy, ``nn`` submodule calls, tensor methods outside ``LAYOUT_METHODS``, operators on inferred tensors
(``kinds``), and ``torch.*`` / numpy names inside ``@triton.jit`` bodies. Strict mode only.
"""

from __future__ import annotations

import ast

from tritonrl.verify.static.scope import Kind, Scope, const_str, dotted, excerpt
from tritonrl.verify.static.values import data_exit_call, is_parameter, layout_root, value_message
from tritonrl.verify.static.vocab import (
    BUILTIN_REDUCERS,
    FILE_QUALNAMES,
    GENERIC_NAMES,
    LAYOUT_METHODS,
    MATERIALIZING,
    PERMUTING,
    tensor_compute_methods,
    torch_call_allowed,
)


def check_torch_compute(scope: Scope):
    """High-level torch compute anywhere it can run (every unit but coverage.py's exemptions) does the work
    instead of Triton (strict mode)."""
    echoes = scope.coverage.echo_ids
    for cls in scope.all_classes:
        for base in cls.bases if id(cls) not in echoes else ():
            q = scope.qualname(base) or ""
            if q.startswith("torch.nn.") and q != "torch.nn.Module":
                yield base, f"class {cls.name} inherits {q}: its forward is PyTorch compute"
    for node in scope.nodes:
        if id(node) in scope.kernel_nodes:
            for n in ast.walk(node):
                if (
                    isinstance(n, (ast.Name, ast.Attribute))
                    and (scope.qualname(n) or "").startswith(("torch.", "numpy."))
                    and not _is_dtype_name(scope.qualname(n))
                ):
                    yield n, f"`{excerpt(n)}` inside @triton.jit kernel {node.name} is not Triton"
    analysed = {id(u) for u in scope.coverage.analysed()}
    for unit in scope.coverage.units:
        if id(unit.node) in echoes:
            continue
        env = scope.env(unit)
        for node in unit.nodes:
            msg = value_message(scope, node, env)  # values escape everywhere, __init__ included
            if msg is None and id(unit) in analysed:
                msg = _compute_message(scope, node, env)
            if msg:
                yield node, f"{msg} in {unit.name}; do this work in a @triton.jit kernel"


def _is_dtype_name(q: str) -> bool:
    return q.rsplit(".", 1)[-1] in (
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "dtype",
    )


def _compute_message(scope: Scope, node: ast.AST, env: dict[str, Kind]) -> str | None:
    if isinstance(node, ast.Call):
        return _compute_call(scope, node, env)
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.Starred)):
        it = node.value if isinstance(node, ast.Starred) else node.iter
        if scope.kind(it, env) == Kind.TENSOR:
            return f"iterating the tensor `{excerpt(it)}` moves its data into Python"
    if isinstance(node, ast.BinOp):
        sides = (scope.kind(node.left, env), scope.kind(node.right, env))
        if isinstance(node.op, ast.MatMult) or Kind.TENSOR in sides:
            return f"`{excerpt(node)}` is tensor arithmetic"
    elif isinstance(node, ast.AugAssign):
        if Kind.TENSOR in (scope.kind(node.target, env), scope.kind(node.value, env)) or isinstance(
            node.op, ast.MatMult
        ):
            return f"`{excerpt(node)}` is tensor arithmetic"
    elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        if scope.kind(node.operand, env) == Kind.TENSOR:
            return f"`{excerpt(node)}` is tensor arithmetic"
    elif isinstance(node, ast.Compare) and scope.kind(node, env) == Kind.TENSOR:
        return f"`{excerpt(node)}` is a tensor comparison"
    elif isinstance(node, ast.Subscript) and scope.kind(node.value, env) == Kind.TENSOR:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            return f"`{excerpt(node)} = ...` writes into a tensor with PyTorch indexing"
        if any(scope.kind(n, env) == Kind.TENSOR for n in ast.walk(node.slice)):
            return f"`{excerpt(node)}` is tensor-indexed (a gather)"
    return None


def _compute_call(scope: Scope, node: ast.Call, env: dict[str, Kind]) -> str | None:
    q = scope.qualname(node.func) or ""
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch."):
        if q.startswith("torch.nn.") and last[:1].isupper():
            return f"`{excerpt(node)}` builds an nn layer on the forward path"
        return None if torch_call_allowed(q) else f"`{excerpt(node)}` calls {q}"

    if q.startswith("numpy.") and last not in ("prod", "dtype") and not q.startswith(FILE_QUALNAMES):
        return f"`{excerpt(node)}` computes with numpy"
    tensors = any(scope.kind(a, env) in (Kind.TENSOR, Kind.TENSORS) for a in node.args)
    if q.startswith(("operator.", "functools.", "itertools.", "math.", "statistics.", "cmath.")) and tensors:
        return f"`{excerpt(node)}` computes on tensors in Python ({q})"
    if q in BUILTIN_REDUCERS and isinstance(node.func, ast.Name) and tensors:
        return f"`{excerpt(node)}` computes on a tensor with a Python builtin"
    msg = data_exit_call(scope, node, env, q)
    if msg:
        return msg
    if scope.kind(node.func, env) == Kind.MODULE:
        return f"`{excerpt(node)}` calls an nn submodule"
    if isinstance(node.func, ast.Attribute):
        return _compute_method(scope, node, env)
    if isinstance(node.func, ast.Call) and dotted(node.func.func) == "getattr" and len(node.func.args) >= 2:
        method = ast.Attribute(value=node.func.args[0], attr=const_str(node.func.args[1]), ctx=ast.Load())
        return _compute_method(scope, ast.Call(func=method, args=node.args, keywords=node.keywords), env)
    return None


def _compute_method(scope: Scope, node: ast.Call, env: dict[str, Kind]) -> str | None:
    func = node.func
    receiver, name = func.value, func.attr
    kind = scope.kind(receiver, env)
    if (
        scope.is_module_ref(receiver)
        or (dotted(receiver) in ("self", "cls") and kind is None)
        or (isinstance(receiver, ast.Call) and dotted(receiver.func) == "super")
    ):
        return None
    if kind == Kind.MODULE and (
        name in ("forward", "__call__", "_call_impl") or name in tensor_compute_methods()
    ):
        return f"`{excerpt(node)}` calls an nn submodule"
    if kind in (Kind.META, Kind.CONTAINER, Kind.MODULE) or isinstance(receiver, ast.Constant):
        return None
    if (
        name in MATERIALIZING
        and (_permuted(scope, receiver, env) or any(k.arg == "memory_format" for k in node.keywords))
        and not is_parameter(scope, layout_root(receiver), env)
    ):
        return f"`{excerpt(node)}` materializes a permuted view (a PyTorch copy kernel)"
    if name in tensor_compute_methods() and (kind == Kind.TENSOR or name not in GENERIC_NAMES):
        return f"`{excerpt(node)}` is a tensor method that computes"
    return None


def _permuted(scope: Scope, node: ast.AST, env: dict[str, Kind], depth: int = 0) -> bool:
    """True when ``node`` is a transposed/permuted/expanded view (directly or through a local name)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Attribute) and node.attr in PERMUTING:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in PERMUTING:
            return True
        if node.func.attr in LAYOUT_METHODS:
            return _permuted(scope, node.func.value, env, depth + 1)
    if isinstance(node, ast.Call) and (scope.qualname(node.func) or "").rsplit(".", 1)[-1] in PERMUTING:
        return True
    if isinstance(node, ast.Name):
        return any(_permuted(scope, v, env, depth + 1) for v in _assigned_values(scope, node.id))
    return False


def _assigned_values(scope: Scope, name: str) -> list[ast.AST]:
    return [
        n.value
        for u in scope.coverage.analysed()
        for n in u.nodes
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]
