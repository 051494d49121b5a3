"""Value kinds for the torch-compute check: what an expression on ModelNew's forward path evaluates to.

``KindInference`` is a mixin of ``scope.Scope`` (which supplies the names, methods and forward path it reads);
checks call ``scope.env(fn)`` for a function's local names and ``scope.kind(node, env)`` for an expression.
Inference is flow-insensitive (a name that is *ever* bound to a tensor counts as a tensor), which errs towards
rejecting.

Value kinds (``Kind``) for the torch-compute check, inferred per forward-path function:
  TENSOR: forward's parameters (unless annotated or defaulted as a number), ``self`` attributes assigned
    ``nn.Parameter`` / a torch tensor / ``register_buffer``, ``weight``/``bias``-like attributes of submodules,
    results of ``torch.*`` calls and of tensor methods, arithmetic or indexing involving a tensor, names bound to
    any of these, parameters of in-file helpers that some call site passes a tensor, and results of in-file
    helpers that return one.
  META: ``.shape``, ``.dtype``, ``.size()``, ``.numel()``, ``.item()`` ... of a tensor (integers, shapes).
  MODULE: ``self`` attributes assigned an ``nn.*`` layer, items of ``nn.Sequential``/``ModuleList``.
  CONTAINER: list/dict/set/tuple literals and constructors (their ``.add``/``.index`` are not tensor methods).
Limits: values that flow through containers, attributes of non-``self`` objects, ``*args`` or return values of
callables passed around are not tracked; those escape the operator rule (the runtime launch check remains).
"""

from __future__ import annotations

import ast
from enum import Enum

# ModelNew methods that start the forward path (scope.py); their parameters are tensors.
FORWARD_ROOTS = ("forward", "__call__", "_call_impl", "_wrapped_call_impl")

# Tensor methods / attributes that return metadata (ints, dtypes, devices), not tensors.
META_METHODS = frozenset(
    {
        "size",
        "stride",
        "numel",
        "dim",
        "ndimension",
        "nelement",
        "element_size",
        "item",
        "data_ptr",
        "storage_offset",
        "is_contiguous",
        "get_device",
        "is_floating_point",
        "is_complex",
        "tolist",
    }
)
META_ATTRS = frozenset(
    {
        "shape",
        "dtype",
        "device",
        "ndim",
        "is_cuda",
        "requires_grad",
        "layout",
        "itemsize",
        "nbytes",
        "is_leaf",
    }
)
PARAM_ATTR_PREFIXES = ("weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias")
_NUMBER_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})


class Kind(str, Enum):
    TENSOR = "tensor"
    META = "meta"
    MODULE = "module"
    CONTAINER = "container"


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    return [
        *a.posonlyargs,
        *a.args,
        *([a.vararg] if a.vararg else []),
        *a.kwonlyargs,
        *([a.kwarg] if a.kwarg else []),
    ]


class KindInference:
    """Per-function value kinds of the forward path (mixed into ``Scope``; see the module docstring)."""

    def callee(self, func: ast.AST) -> ast.FunctionDef | None:
        """The in-file function or ModelNew method a call's ``func`` names, if any."""
        if isinstance(func, ast.Name) and func.id in self.functions:
            return self.functions[func.id]
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls", "ModelNew")
            and func.attr in self.methods
        ):
            return self.methods[func.attr]
        return None

    def _initial_params(self, fn: ast.FunctionDef) -> dict[str, Kind]:
        kinds: dict[str, Kind] = {}
        is_root = any(fn is m for n, m in self.methods.items() if n in FORWARD_ROOTS)
        a = fn.args
        positional = [*a.posonlyargs, *a.args]
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults) :]], a.defaults))
        for p in _params(fn):
            if p.arg in ("self", "cls"):
                continue
            numeric = (isinstance(p.annotation, ast.Name) and p.annotation.id in _NUMBER_ANNOTATIONS) or (
                isinstance(defaults.get(p.arg), ast.Constant) and defaults[p.arg].value is not None
            )
            if is_root and not numeric:
                kinds[p.arg] = Kind.TENSOR
        return kinds

    def _infer_interprocedural(self) -> None:
        for fn in self.forward_path:
            self.param_kinds[id(fn)] = self._initial_params(fn)
        for _ in range(6):
            changed = False
            for fn in self.forward_path:
                env = self.env(fn)
                for node in ast.walk(fn):
                    if (
                        isinstance(node, ast.Return)
                        and node.value is not None
                        and self.kind(node.value, env) == Kind.TENSOR
                        and id(fn) not in self.return_kinds
                    ):
                        self.return_kinds[id(fn)] = Kind.TENSOR
                        changed = True
                    if isinstance(node, ast.Call):
                        changed |= self._pass_args(node, env)
            if not changed:
                break

    def _pass_args(self, call: ast.Call, env: dict[str, Kind]) -> bool:
        target = self.callee(call.func)
        if target is None or id(target) not in self.param_kinds:
            return False
        names = [p.arg for p in [*target.args.posonlyargs, *target.args.args] if p.arg not in ("self", "cls")]
        pairs = list(zip(names, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
        kinds, changed = self.param_kinds[id(target)], False
        for name, value in pairs:
            if self.kind(value, env) == Kind.TENSOR and kinds.get(name) != Kind.TENSOR:
                kinds[name] = Kind.TENSOR
                changed = True
        return changed

    def env(self, fn: ast.AST) -> dict[str, Kind]:
        """Kinds of the local names of a forward-path function (flow-insensitive fixpoint)."""
        env: dict[str, Kind] = dict(self.param_kinds.get(id(fn), {}))
        for _ in range(4):
            before = dict(env)
            for node in ast.walk(fn):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        self._bind(t, node.value, env)
                elif isinstance(node, (ast.For, ast.comprehension)):
                    it = self.kind(node.iter, env)
                    if it in (Kind.TENSOR, Kind.MODULE):
                        self._bind_kind(node.target, it, env)
                elif isinstance(node, ast.AugAssign) and self.kind(node.value, env) == Kind.TENSOR:
                    self._bind_kind(node.target, Kind.TENSOR, env)
            if env == before:
                break
        return env

    def _bind(self, target: ast.AST, value: ast.AST, env: dict[str, Kind]) -> None:
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
        ):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v, env)
            return
        kind = self.kind(value, env)
        if kind is not None:
            self._bind_kind(target, kind, env)

    @staticmethod
    def _bind_kind(target: ast.AST, kind: Kind, env: dict[str, Kind]) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name) and env.get(n.id) != Kind.TENSOR:  # tensor wins: err towards rejecting
                env[n.id] = kind

    def kind(self, node: ast.AST, env: dict[str, Kind]) -> Kind | None:
        """The inferred kind of an expression's value, or None when unknown."""
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(
            node, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp)
        ):
            return Kind.CONTAINER
        if isinstance(node, ast.Attribute):
            return self._attribute_kind(node, env)
        if isinstance(node, ast.Subscript):
            base = self.kind(node.value, env)
            return base if base in (Kind.TENSOR, Kind.MODULE, Kind.META) else None
        if isinstance(node, ast.Call):
            return self._call_kind(node, env)
        if isinstance(node, ast.BinOp):
            sides = {self.kind(node.left, env), self.kind(node.right, env)}
            return Kind.TENSOR if Kind.TENSOR in sides or isinstance(node.op, ast.MatMult) else None
        if isinstance(node, ast.UnaryOp):
            return Kind.TENSOR if self.kind(node.operand, env) == Kind.TENSOR else None
        if isinstance(node, ast.IfExp):
            return (
                Kind.TENSOR
                if Kind.TENSOR in {self.kind(node.body, env), self.kind(node.orelse, env)}
                else None
            )
        if isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return None
            operands = [node.left, *node.comparators]
            return Kind.TENSOR if any(self.kind(o, env) == Kind.TENSOR for o in operands) else None
        return None

    def _attribute_kind(self, node: ast.Attribute, env: dict[str, Kind]) -> Kind | None:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            bound = self.self_attrs.get(node.attr)
            return bound if isinstance(bound, Kind) else None
        base = self.kind(node.value, env)
        if base == Kind.TENSOR:
            return Kind.META if node.attr in META_ATTRS else Kind.TENSOR
        if base == Kind.MODULE and node.attr.startswith(PARAM_ATTR_PREFIXES):
            return Kind.TENSOR
        return None

    def _call_kind(self, node: ast.Call, env: dict[str, Kind]) -> Kind | None:
        if isinstance(node.func, ast.Name) and node.func.id in ("list", "dict", "set", "tuple"):
            return Kind.CONTAINER
        target = self.callee(node.func)
        if target is not None:
            return self.return_kinds.get(id(target))
        if self.kind(node.func, env) == Kind.MODULE:
            return Kind.TENSOR
        q = self.qualname(node.func) or ""
        if q.startswith("torch.") and not q.startswith(("torch.cuda.", "torch.backends.")):
            last = q.rsplit(".", 1)[-1]
            return (
                None
                if last in ("device", "dtype", "Size", "finfo", "iinfo") or last.startswith("is_")
                else Kind.TENSOR
            )
        if isinstance(node.func, ast.Attribute) and self.kind(node.func.value, env) == Kind.TENSOR:
            return Kind.META if node.func.attr in META_METHODS else Kind.TENSOR
        return None
