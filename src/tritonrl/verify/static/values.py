"""Torch compute that travels as a value, or leaves the tensor for Python (strict mode, read by compute.py).

Calls are easy to see; values are how a policy hides them: ``OPS = {"act": F.gelu}``, ``f = x.relu``,
``functools.reduce(operator.matmul, [x, w])``, ``map(math.exp, x.tolist())``. These rules apply in every unit
except the main block and echoed reference code (a value stored in ``__init__`` is called later):
  - a torch compute function (``torch.relu``, ``torch.Tensor.add``, ``F.gelu``) used as a value;
  - a tensor compute method taken without calling it (``x.relu``, ``type(x).__add__`` passed on);
  - Python arithmetic used as a value (``operator.mul``, ``math.exp``, builtin ``max``/``sum``/``abs``...),
    unless it is folded over shapes only: ``functools.reduce(operator.mul, x.shape, 1)`` passes;
and, in analysed units, data leaving the tensor: ``.tolist()``, ``.numpy()``, ``__array__``, ``iter(x)``,
``list(x)``, ``bytes(x)`` ... (iterating a tensor and ``*x`` are rejected in compute.py).
Limits: ``.item()`` / ``float(x)`` (a scalar) stay allowed; element-by-element Python compute through them is
left to the runtime output-provenance check.
"""

from __future__ import annotations

import ast
import functools

from tritonrl.verify.static.facts import remembered
from tritonrl.verify.static.kinds import Kind
from tritonrl.verify.static.names import excerpt
from tritonrl.verify.static.vocab import (
    GENERIC_NAMES,
    LAYOUT_METHODS,
    PERMUTING,
    is_torch_compute_function,
    tensor_compute_methods,
)

# fmt: off
_OPERATOR_ARITH = frozenset({"add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "neg", "pos",
    "abs", "and_", "or_", "xor", "lshift", "rshift", "invert", "inv", "lt", "le", "gt", "ge", "eq", "ne",
    "iadd", "isub", "imul", "imatmul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor",
    "concat", "iconcat", "getitem", "setitem"})
PY_ARITH_BUILTINS = frozenset({"abs", "sum", "pow", "round", "min", "max", "divmod", "sorted"})
# numbers, not arithmetic: ``LOG2E = math.log2(math.e)`` is the tutorial softmax's (the thirtieth red team's h03)
MATH_CONSTANTS = frozenset({"e", "pi", "tau", "inf", "nan", "infj", "nanj"})
FOLDERS = frozenset({"functools.reduce", "itertools.accumulate", "map", "itertools.starmap"})
DATA_EXIT_METHODS = frozenset({"tolist", "numpy", "__array__", "__iter__", "__dlpack__", "__array_interface__",
    "__cuda_array_interface__", "__reduce__", "__reduce_ex__", "__getstate__", "__index__", "__float__",
    "__int__", "__bool__", "__len__", "__next__", "__contains__"})
DATA_EXIT_BUILTINS = frozenset({"iter", "list", "tuple", "set", "sorted", "reversed", "enumerate", "zip", "map",
    "filter", "memoryview", "bytes", "bytearray", "next", "frozenset", "dict", "any", "all"})
# fmt: on


def _is_arith_value(q: str) -> bool:
    if q.startswith("operator."):
        name = q.split(".", 1)[1]
        return name in _OPERATOR_ARITH or name.strip("_") in _OPERATOR_ARITH
    if q.startswith(("math.", "cmath.", "statistics.")):
        name = q.rsplit(".", 1)[-1]
        return not name.startswith("_") and name not in MATH_CONSTANTS
    return q in PY_ARITH_BUILTINS


@functools.cache
def tensor_routines() -> frozenset[str]:
    """Tensor compute names that are methods (not properties such as ``.T``), for the ``x.relu`` value rule."""
    return frozenset(remembered("tensor_routines", "", _tensor_routines))


def _tensor_routines() -> list[str]:
    import inspect

    import torch  # lazily, and once per installed torch (tritonrl.verify.static.facts)

    return sorted(n for n in tensor_compute_methods() if inspect.isroutine(inspect.getattr_static(torch.Tensor, n, None)))


def value_message(scope, node: ast.AST, env) -> str | None:
    """A compute function, tensor method or Python arithmetic used as a value (see the module docstring)."""
    if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
        return None
    parent = scope.coverage.parents.get(id(node))
    if isinstance(parent, ast.Call) and parent.func is node:
        return None

    q = scope.qualname(node) or ""
    if not (isinstance(parent, ast.Attribute) and parent.value is node) and is_torch_compute_function(q):
        return f"`{excerpt(node)}` passes {q} around as a value"
    if (
        isinstance(node, ast.Attribute)
        and node.attr in tensor_routines()
        and not scope.is_module_ref(node.value)
    ):
        kind = scope.kind(node.value, env)
        if kind == Kind.TENSOR or (
            kind is None
            and node.attr not in GENERIC_NAMES
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            return f"`{excerpt(node)}` takes a tensor method as a value"
    if _is_arith_value(q) and not (isinstance(parent, ast.Attribute) and parent.value is node):
        if isinstance(node, ast.Name) and node.id in env:
            return None  # a local name that shadows the builtin
        if not _folds_shapes_only(scope, parent, node, env):
            return f"`{excerpt(node)}` passes Python arithmetic ({q}) around as a value"
    return None


def _folds_shapes_only(scope, call: ast.AST | None, fn: ast.AST, env) -> bool:
    """``reduce(operator.mul, x.shape, 1)`` / ``map(max, sizes)``: arithmetic folded over shape data only."""
    if not isinstance(call, ast.Call) or (scope.qualname(call.func) or "") not in FOLDERS:
        return False
    data = [a for a in [*call.args, *(k.value for k in call.keywords)] if a is not fn]
    return bool(data) and all(_shape_data(scope, a, env) for a in data)


def _shape_data(scope, node: ast.AST, env) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, type(None))):
        return True
    kind = scope.kind(node, env)
    if kind == Kind.META:
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_shape_data(scope, e, env) or scope.kind(e, env) is None for e in node.elts)
    if isinstance(node, ast.Call) and (scope.qualname(node.func) or "") == "range":
        return True
    return False


def data_exit_call(scope, node: ast.Call, env, q: str) -> str | None:
    """``x.tolist()``, ``x.numpy()``, ``list(x)``, ``bytes(x)``: the tensor's data leaves for Python compute."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in DATA_EXIT_METHODS:
        kind = scope.kind(func.value, env)
        if kind == Kind.TENSOR or (
            kind is None
            and func.attr in ("tolist", "numpy", "__array__")
            and not scope.is_module_ref(func.value)
        ):
            return f"`{excerpt(node)}` moves tensor data into Python"
    if q in DATA_EXIT_BUILTINS and isinstance(func, ast.Name) and func.id not in env:
        if any(scope.kind(a, env) == Kind.TENSOR for a in node.args):
            return f"`{excerpt(node)}` moves tensor data into Python"
    return None


def layout_root(node: ast.AST) -> ast.AST:
    """The receiver under a chain of layout calls / views: ``self.weight`` in ``self.weight.t().view(...)``."""

    while True:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (node.func.attr in LAYOUT_METHODS or node.func.attr in PERMUTING)
        ):
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in PERMUTING:
            node = node.value
        else:
            return node


def is_parameter(scope, node: ast.AST, env) -> bool:
    """``self.weight`` bound to a parameter/buffer in ``__init__`` only, or ``self.<layer>.weight``: a layout
    copy of it (``self.weight.t().contiguous()``) is weight preparation, not the task's compute."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr in scope.param_attrs.get(id(env.cls), set())
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
        inner = node.value
        return (
            isinstance(inner.value, ast.Name)
            and inner.value.id == "self"
            and scope.kind(inner, env) == Kind.MODULE
            and scope.kind(node, env) == Kind.TENSOR
        )
    return False
