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

from tritonrl.verify.static.names import const_str, dotted
from tritonrl.verify.static.vocab import META_METHODS

# Tensor methods / attributes that return metadata (ints, dtypes, devices), not tensors.
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
    TENSORS = (
        "tensors"  # a container known to hold tensors (list of kernel outputs, split results, ParameterList)
    )
    ARGS = "args"  # a kernel's arguments by name, as Triton hands them to a hook or heuristic (``nargs["x"]``)


SPLITTING = frozenset({"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit"})


class Env(dict):
    """Kinds of a unit's local names, plus the class whose ``self`` the unit sees."""

    cls: ast.ClassDef | None = None


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    return [
        *a.posonlyargs,
        *a.args,
        *([a.vararg] if a.vararg else []),
        *a.kwonlyargs,
        *([a.kwarg] if a.kwarg else []),
    ]


CALLBACK_KEYWORDS = frozenset({"pre_hook", "post_hook", "perf_model", "early_config_prune", "prune_configs_by"})


def triton_callbacks(scope) -> set[int]:
    """id() of the function-likes handed to Triton to call with a kernel's arguments: ``pre_hook=``/``post_hook=``
    (``triton.Config``, ``triton.autotune``), the values of ``triton.heuristics({...})`` and of
    ``prune_configs_by={...}``, and ``kernel.add_pre_run_hook(f)``. Cached on the scope."""
    cached = getattr(scope, "_triton_callbacks", None)
    if cached is not None:
        return cached
    handed: list[ast.AST] = []
    for node in scope.nodes:
        if not isinstance(node, ast.Call):
            continue
        for k in node.keywords:
            if k.arg in CALLBACK_KEYWORDS:
                handed += list(k.value.values) if isinstance(k.value, ast.Dict) else [k.value]
        q = scope.qualname(node.func) or ""
        if q.endswith("heuristics") and node.args and isinstance(node.args[0], ast.Dict):
            handed += node.args[0].values
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_pre_run_hook":
            handed += node.args[:1]
    found = set()
    for value in handed:
        if isinstance(value, ast.Lambda):
            found.add(id(value))
        elif isinstance(value, ast.Name):
            found |= {id(d) for d in scope.coverage.defs_by_name.get(value.id, [])}
    scope._triton_callbacks = found
    return found


def kernel_arg_kinds(scope) -> dict[str, Kind]:
    """Each kernel parameter's kind, from the launches (``kernel[grid](x, out, n, BLOCK=1024)``): TENSOR when
    some launch passes a tensor for it. Cached on the scope."""
    cached = getattr(scope, "_kernel_arg_kinds", None)
    if cached is not None:
        return cached
    scope._kernel_arg_kinds = kinds = {}
    defs = {id(n): n for n in scope.nodes if id(n) in scope.kernel_nodes}
    by_name = {n.name: n for n in defs.values()}
    for node in scope.nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in by_name):
            continue
        params = [a.arg for a in [*by_name[node.func.value.id].args.posonlyargs, *by_name[node.func.value.id].args.args]]
        unit = scope.coverage.unit_of.get(id(node))
        env = scope.env(unit) if unit is not None else Env()
        pairs = list(zip(params, node.args)) + [(k.arg, k.value) for k in node.keywords if k.arg]
        for name, value in pairs:
            if scope.kind(value, env) == Kind.TENSOR:
                kinds[name] = Kind.TENSOR
    return kinds


class KindInference:
    """Per-unit value kinds of the analysed code (mixed into ``Scope``; see the module docstring)."""

    def callees(self, func: ast.AST) -> list[ast.AST]:
        """In-file defs a call's ``func`` may name: functions by name, methods by attribute name (over-approx)."""
        cov = self.coverage
        if isinstance(func, ast.Name):
            if func.id in self.classes:
                init = cov._init_of(self.classes[func.id])
                return [init] if init is not None else []
            return cov.defs_by_name.get(func.id, [])
        if isinstance(func, ast.Attribute) and not self.is_module_ref(func.value):
            return cov.methods_by_name.get(func.attr, [])
        if isinstance(func, ast.Lambda):
            return [func]
        return []

    def _initial_params(self, unit) -> dict[str, Kind]:
        """Escaping callables (lambdas, forward, anything passed around) get tensor parameters; ``*args`` and
        ``**kwargs`` are containers of tensors; a callable handed to Triton (a ``pre_hook``, a heuristic, a pre-run
        hook, an autotuner's pruner) gets the kernel's arguments by name (``Kind.ARGS``: ``nargs["x"]`` is a
        tensor when a launch passes a tensor for ``x``)."""
        fn = unit.node
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return {}
        if id(fn) not in self.coverage.escaping:
            return {}
        if id(fn) in triton_callbacks(self):
            return {p.arg: Kind.ARGS for p in _params(fn) if p.arg not in ("self", "cls")}
        a = fn.args
        positional = [*a.posonlyargs, *a.args]
        defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults) :]], a.defaults))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        is_method = (
            isinstance(unit.parent.node, ast.ClassDef)
            and not isinstance(fn, ast.Lambda)
            and not any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in getattr(fn, "decorator_list", [])
            )
        )
        kinds: dict[str, Kind] = {}
        for i, p in enumerate(_params(fn)):
            if (is_method and i == 0) or p.arg in ("self", "cls"):
                continue
            numeric = (isinstance(p.annotation, ast.Name) and p.annotation.id in _NUMBER_ANNOTATIONS) or (
                isinstance(defaults.get(p.arg), ast.Constant) and defaults[p.arg].value is not None
            )
            if not numeric:
                kinds[p.arg] = Kind.TENSORS if p in (a.vararg, a.kwarg) else Kind.TENSOR
        return kinds

    def _infer_interprocedural(self) -> None:
        units = self.coverage.analysed()
        for u in self.coverage.units:
            self.param_kinds[id(u.node)] = self._initial_params(u)
        for _ in range(6):
            changed = False
            self._env_cache: dict[int, Env] = {}
            for u in units:
                env = self.env(u)
                for node in u.nodes:
                    if isinstance(node, ast.Return) and node.value is not None:
                        changed |= self._set_return(u.node, self.kind(node.value, env))
                    elif isinstance(node, ast.Call):
                        changed |= self._pass_args(node, env)
                    elif isinstance(node, ast.Assign) and env.cls is not None:
                        changed |= self._self_attr_update(node, env)
                if isinstance(u.node, ast.Lambda):
                    changed |= self._set_return(u.node, self.kind(u.node.body, env))
            if not changed:
                break
        self._env_cache = {}

    def _set_return(self, fn: ast.AST, kind: Kind | None) -> bool:
        if kind in (Kind.TENSOR, Kind.TENSORS) and self.return_kinds.get(id(fn)) != Kind.TENSOR:
            self.return_kinds[id(fn)] = kind
            return True
        return False

    def _self_attr_update(self, node: ast.Assign, env: Env) -> bool:
        """``self.x = <tensor>`` anywhere makes ``self.x`` a (computed) tensor for the whole class."""
        kind = self.kind(node.value, env)
        changed = False
        for t in node.targets:
            if (
                isinstance(t, ast.Attribute)
                and dotted(t.value) == "self"
                and kind in (Kind.TENSOR, Kind.TENSORS)
            ):
                attrs = self.self_attrs.setdefault(id(env.cls), {})
                if attrs.get(t.attr) != kind:
                    attrs[t.attr] = kind
                    self.param_attrs.get(id(env.cls), set()).discard(t.attr)
                    changed = True
        return changed

    def _pass_args(self, call: ast.Call, env: Env) -> bool:
        changed = False
        for target in self.callees(call.func):
            kinds = self.param_kinds.setdefault(id(target), {})
            params = [p.arg for p in [*target.args.posonlyargs, *target.args.args]]
            if params and params[0] in ("self", "cls") and not isinstance(target, ast.Lambda):
                params = params[1:]
            pairs = list(zip(params, call.args)) + [(k.arg, k.value) for k in call.keywords if k.arg]
            for name, value in pairs:
                if self.kind(value, env) == Kind.TENSOR and kinds.get(name) != Kind.TENSOR:
                    kinds[name] = Kind.TENSOR
                    changed = True
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                for name in {p.arg for p in _params(target)} - {"self", "cls"}:
                    if kinds.get(name) != Kind.TENSOR:  # *args / **kwargs hide which parameter gets what
                        kinds[name] = Kind.TENSOR
                        changed = True
        return changed

    def env(self, unit) -> Env:
        """Kinds of a unit's names: the enclosing units' (closures), its parameters, then a flow-insensitive
        fixpoint over its own statements."""
        cache = getattr(self, "_env_cache", None)
        if cache is not None and id(unit) in cache:
            return cache[id(unit)]
        env = Env(self.env(unit.parent) if unit.parent is not None else {})
        env.cls = self.class_of(unit)
        for name, kind in self.param_kinds.get(id(unit.node), {}).items():
            env[name] = kind
        for _ in range(4):
            before = dict(env)
            for node in unit.nodes:
                self._bind_node(node, env)
            if env == before:
                break
        if cache is not None:
            cache[id(unit)] = env
        return env

    def _bind_node(self, node: ast.AST, env: Env) -> None:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self._bind(t, node.value, env)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            it = self.kind(node.iter, env)
            if it in (Kind.TENSOR, Kind.MODULE, Kind.TENSORS):
                self._bind_kind(node.target, Kind.MODULE if it == Kind.MODULE else Kind.TENSOR, env)
        elif isinstance(node, ast.AugAssign) and self.kind(node.value, env) == Kind.TENSOR:
            self._bind_kind(node.target, Kind.TENSOR, env)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._bind(node.optional_vars, node.context_expr, env)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend", "insert", "add")
            and isinstance(node.func.value, ast.Name)
            and any(self.kind(a, env) in (Kind.TENSOR, Kind.TENSORS) for a in node.args)
        ):
            env[node.func.value.id] = Kind.TENSORS

    def _bind(self, target: ast.AST, value: ast.AST, env: Env) -> None:
        if (
            isinstance(target, (ast.Tuple, ast.List))
            and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
        ):
            for t, v in zip(target.elts, value.elts):
                self._bind(t, v, env)
            return
        kind = self.kind(value, env)
        if kind == Kind.TENSORS and isinstance(target, (ast.Tuple, ast.List)):
            kind = Kind.TENSOR  # a, b = x.chunk(2)
        if kind is not None:
            self._bind_kind(target, kind, env)

    @staticmethod
    def _bind_kind(target: ast.AST, kind: Kind, env: Env) -> None:
        """Bind the names ``target`` assigns (through tuples, lists and starred ones; ``self.w = ...`` binds no
        name: ``self`` is not what was assigned)."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                KindInference._bind_kind(t, kind, env)
        elif isinstance(target, ast.Starred):
            KindInference._bind_kind(target.value, kind, env)
        elif isinstance(target, ast.Name) and env.get(target.id) != Kind.TENSOR:  # tensor wins: err towards rejecting
            env[target.id] = kind

    def kind(self, node: ast.AST, env: Env) -> Kind | None:
        """The inferred kind of an expression's value, or None when unknown."""
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            elts = node.values if isinstance(node, ast.Dict) else node.elts
            elts = [e.value if isinstance(e, ast.Starred) else e for e in elts]
            inner = {self.kind(e, env) for e in elts}
            return Kind.TENSORS if inner & {Kind.TENSOR, Kind.TENSORS} else Kind.CONTAINER
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = Env(env)
            inner.cls = env.cls
            for gen in node.generators:
                self._bind_node(gen, inner)
            elt = node.value if isinstance(node, ast.DictComp) else node.elt
            return Kind.TENSORS if self.kind(elt, inner) in (Kind.TENSOR, Kind.TENSORS) else Kind.CONTAINER
        if isinstance(node, ast.Attribute):
            return self._attribute_kind(node, env)
        if isinstance(node, ast.Subscript):
            base = self.kind(node.value, env)
            key = const_str(node.slice)
            if key is not None:  # a string key: a dict; of tensors when the dict is of them
                if base == Kind.ARGS:
                    return kernel_arg_kinds(self).get(key)
                return Kind.TENSOR if base == Kind.TENSORS else None
            if base == Kind.TENSORS:
                return Kind.TENSORS if isinstance(node.slice, ast.Slice) else Kind.TENSOR
            return base if base in (Kind.TENSOR, Kind.MODULE, Kind.META) else None
        if isinstance(node, ast.Call):
            return self._call_kind(node, env)
        if isinstance(node, ast.BinOp):
            sides = {self.kind(node.left, env), self.kind(node.right, env)}
            return Kind.TENSOR if Kind.TENSOR in sides or isinstance(node.op, ast.MatMult) else None
        if isinstance(node, ast.UnaryOp):
            return Kind.TENSOR if self.kind(node.operand, env) == Kind.TENSOR else None
        if isinstance(node, (ast.IfExp, ast.BoolOp)):
            parts = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
            kinds = {self.kind(p, env) for p in parts}
            return Kind.TENSOR if Kind.TENSOR in kinds else Kind.TENSORS if Kind.TENSORS in kinds else None
        if isinstance(node, ast.NamedExpr):
            return self.kind(node.value, env)
        if isinstance(node, ast.Compare):
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return None
            operands = [node.left, *node.comparators]
            return Kind.TENSOR if any(self.kind(o, env) == Kind.TENSOR for o in operands) else None
        return None

    def _attribute_kind(self, node: ast.Attribute, env: Env) -> Kind | None:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            bound = self.self_attrs.get(id(env.cls), {}).get(node.attr)
            return bound if isinstance(bound, Kind) else None
        base = self.kind(node.value, env)
        if base == Kind.TENSOR:
            return Kind.META if node.attr in META_ATTRS else Kind.TENSOR
        if base == Kind.MODULE and node.attr.startswith(PARAM_ATTR_PREFIXES):
            return Kind.TENSOR
        return None

    def _call_kind(self, node: ast.Call, env: Env) -> Kind | None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("list", "dict", "set", "tuple", "sorted", "reversed"):
            inner = self.kind(node.args[0], env) if node.args else None
            return Kind.TENSORS if inner in (Kind.TENSOR, Kind.TENSORS) else Kind.CONTAINER
        targets = self.callees(func)
        if targets and not isinstance(func, ast.Attribute):
            kinds = {self.return_kinds.get(id(t)) for t in targets}
            return Kind.TENSOR if Kind.TENSOR in kinds else Kind.TENSORS if Kind.TENSORS in kinds else None
        if self.kind(func, env) == Kind.MODULE:
            return Kind.TENSOR
        q = self.qualname(func) or ""
        if q.startswith("torch.") and not q.startswith(("torch.cuda.", "torch.backends.")):
            last = q.rsplit(".", 1)[-1]
            if last in ("device", "dtype", "Size", "finfo", "iinfo") or last.startswith("is_"):
                return None
            return Kind.TENSORS if last in SPLITTING else Kind.TENSOR
        if isinstance(func, ast.Attribute):
            receiver = self.kind(func.value, env)
            if receiver == Kind.TENSOR:
                if func.attr in META_METHODS:
                    return Kind.META
                return Kind.TENSORS if func.attr in SPLITTING else Kind.TENSOR
            kinds = {self.return_kinds.get(id(t)) for t in targets}
            if Kind.TENSOR in kinds:
                return Kind.TENSOR
        return None
