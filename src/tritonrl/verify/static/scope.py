"""What the static checks know about a candidate module: names, ModelNew, its forward path.

``Scope(tree)`` is built once per candidate and read by every check in ``tritonrl.verify.static``. Everything is
read from the AST, flow-insensitively (a name that is *ever* bound to a tensor counts as a tensor), which errs
towards rejecting.

Name resolution: ``scope.qualname(expr)`` turns ``Fn.relu`` into ``torch.nn.functional.relu`` through every
import alias, simple re-binding (``mm = torch.matmul``, ``self.act = F.gelu``, a parameter default
``f=torch.relu``) and constant ``getattr(torch, "matmul")``. A bare name that nothing binds resolves to itself
(``exit``, ``open``).

Forward path: ModelNew's ``forward`` / ``__call__`` / ``_call_impl``, functions passed to ``register_*hook``,
every method of an in-file base class, and transitively every in-file function, method or class that these
*reference* (a call, or a reference passed on, e.g. ``functools.partial(helper)``). ``@triton.jit`` bodies are
Triton code and never part of it.

Value kinds (``Kind``, ``scope.kind`` / ``scope.env``) are inferred by ``kinds.KindInference``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tritonrl.verify.static.coverage import Coverage, Unit
from tritonrl.verify.static.kinds import Kind, KindInference
from tritonrl.verify.static.names import const_str, dotted, excerpt, import_only, is_dunder

__all__ = ["Kind", "Scope", "Unit", "const_str", "dotted", "excerpt", "import_only", "is_dunder"]

JIT_DECORATORS = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
_HOOK_PREFIX = "register_"
NN_NON_MODULES = frozenset(
    {"Parameter", "ParameterList", "ParameterDict", "Buffer", "Module", "init", "functional"}
)


def walk_outside_kernels(scope: Scope, root: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that does not descend into @triton.jit function bodies."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if id(c) not in scope.kernel_nodes)


class Scope(KindInference):
    """Facts about one parsed candidate module (see the module docstring)."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.nodes: list[ast.AST] = list(ast.walk(tree))  # walked once; every check iterates this list
        self._qualnames: dict[int, str | None] | None = None  # memo, filled once the aliases are final
        self.aliases: dict[str, str] = {}  # local (possibly dotted, e.g. "self.act") name -> qualname
        self.imported: set[str] = set()  # local names bound by import statements
        self.plain_imports: set[str] = set()  # local names bound by ``import x`` (always modules)
        self.functions: dict[str, ast.FunctionDef] = {}  # top-level non-kernel functions
        self.classes: dict[str, ast.ClassDef] = {}
        self.kernel_names: set[str] = set()
        self.kernel_nodes: set[int] = set()  # id() of @triton.jit FunctionDefs
        self.modelnew: ast.ClassDef | None = None
        self.modelnew_rebound: list[ast.AST] = []
        self._collect_top_level()
        self._collect_aliases()
        self._collect_kernels()
        self._qualnames = {}
        self.all_classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        self.coverage = Coverage(tree, self.nodes, self.kernel_nodes, self.modelnew, self.classes)
        self.self_attrs: dict[int, dict[str, Kind | str]] = {}  # id(class) -> attr -> kind / bound name
        self.param_attrs: dict[int, set[str]] = {}  # id(class) -> attrs bound to parameters / buffers
        self._self_attr_kinds()
        self.param_kinds: dict[int, dict[str, Kind]] = {}
        self.return_kinds: dict[int, Kind] = {}
        self._infer_interprocedural()

    # ------------------------------------------------------------------ collection
    def _collect_top_level(self) -> None:
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
                if node.name == "ModelNew":
                    self.modelnew = node
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.functions[t.id] = node.value  # a lambda bound at module level is a function
        for node in self.nodes:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr))
                else []
            )
            for t in targets:
                elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
                if any(isinstance(n, ast.Name) and n.id == "ModelNew" for n in elts):
                    self.modelnew_rebound.append(node)

    def _collect_aliases(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    local = a.asname or a.name.split(".")[0]
                    self.aliases[local] = a.name if a.asname else local
                    self.imported.add(local)
                    self.plain_imports.add(local)
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{module}.{a.name}"
                    self.imported.add(a.asname or a.name)
        class_attrs = [
            (f"self.{t.id}", s.value)
            for c in self.nodes
            if isinstance(c, ast.ClassDef)
            for s in c.body
            if isinstance(s, ast.Assign)
            for t in s.targets
            if isinstance(t, ast.Name)
        ]
        for _ in range(3):  # re-bindings of re-bindings
            for node in self.nodes:
                for target, value in [*self._simple_bindings(node), *class_attrs]:
                    q = self.qualname(value)
                    if q and q.split(".")[0] in self.imported and target not in self.imported:
                        self.aliases[target] = q

    @staticmethod
    def _simple_bindings(node: ast.AST):
        """(local dotted name, value) for ``name = value``, ``self.x = value``, walrus, and parameter defaults."""
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if dotted(t):
                    yield dotted(t), node.value
        elif (
            isinstance(node, (ast.AnnAssign, ast.NamedExpr))
            and node.value is not None
            and dotted(node.target)
        ):
            yield dotted(node.target), node.value
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            for arg, default in zip(positional[len(positional) - len(a.defaults) :], a.defaults):
                yield arg.arg, default
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                if default is not None:
                    yield arg.arg, default

    def _collect_kernels(self) -> None:
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(
                    self.qualname(d.func if isinstance(d, ast.Call) else d) in JIT_DECORATORS
                    for d in node.decorator_list
                ):
                    self.kernel_nodes.add(id(node))
                    self.kernel_names.add(node.name)
            elif (
                isinstance(node, ast.Call)
                and self.qualname(node.func) in JIT_DECORATORS
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in self.functions
            ):
                fn = self.functions[node.args[0].id]
                self.kernel_nodes.add(id(fn))
                self.kernel_names.add(fn.name)
        for name in list(self.functions):
            if id(self.functions[name]) in self.kernel_nodes:
                del self.functions[name]

    # ------------------------------------------------------------------ names
    def qualname(self, node: ast.AST) -> str | None:
        """Fully qualified name of a Name/Attribute chain or constant ``getattr``, through every alias."""
        memo = self._qualnames
        if memo is None:
            return self._qualname(node)
        if id(node) not in memo:
            memo[id(node)] = self._qualname(node)
        return memo[id(node)]

    def _qualname(self, node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and const_str(node.args[1])
        ):
            base = self.qualname(node.args[0])
            raw = f"{base}.{const_str(node.args[1])}" if base else None
        elif isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            raw = f"{base}.{node.attr}" if base else None
        else:
            raw = dotted(node)
        return self._resolve(raw) if raw else None

    def _resolve(self, raw: str) -> str:
        parts = raw.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if head in self.aliases and self.aliases[head] != head:
                return ".".join([self.aliases[head], *parts[i:]])
        return raw

    def is_module_ref(self, node: ast.AST) -> bool:
        """True when the expression's root is a name bound by an import (a module or an imported object)."""
        raw = dotted(node)
        return bool(raw) and raw.split(".")[0] in self.imported

    # ------------------------------------------------------------------ classes
    def in_file_bases(self, cls: ast.ClassDef, seen: set[str] | None = None) -> list[ast.ClassDef]:
        seen = seen if seen is not None else {cls.name}
        found = []
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in self.classes and b.id not in seen and b.id != "Model":
                seen.add(b.id)
                found += [self.classes[b.id], *self.in_file_bases(self.classes[b.id], seen)]
        return found

    def _self_attr_kinds(self) -> None:
        """Per class (with in-file bases): ``self.<attr>`` -> Kind or in-file class/function name; parameters."""
        for cls in self.all_classes:
            attrs: dict[str, Kind | str] = {}
            params: set[str] = set()
            for c in [*reversed(self.in_file_bases(cls)), cls]:
                for fn in (i for i in c.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    for node in ast.walk(fn):
                        self._self_attr_binding(node, attrs, params)
            self.self_attrs[id(cls)] = attrs
            self.param_attrs[id(cls)] = params

    def _self_attr_binding(self, node: ast.AST, attrs: dict, params: set[str]) -> None:
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("register_buffer", "register_parameter")
            and const_str(node.args[0] if node.args else None)
        ):
            attrs[const_str(node.args[0])] = Kind.TENSOR
            params.add(const_str(node.args[0]))
        for target, value in self._simple_bindings(node):
            if target.startswith("self.") and target.count(".") == 1:
                kind = self._init_value_kind(value)
                if kind is not None:
                    attrs[target[5:]] = kind
                if kind == Kind.TENSOR:
                    params.add(target[5:])

    def _init_value_kind(self, value: ast.AST) -> Kind | str | None:
        if isinstance(value, ast.Name) and (value.id in self.functions or value.id in self.classes):
            return value.id
        if isinstance(value, ast.Call):
            if isinstance(value.func, ast.Name) and value.func.id in self.classes:
                return value.func.id
            q = self.qualname(value.func) or ""
            last = q.rsplit(".", 1)[-1]
            if q.startswith("torch.nn.") and last in ("ParameterList", "ParameterDict"):
                return Kind.TENSORS
            if q.startswith("torch.nn.") and last[:1].isupper() and last not in NN_NON_MODULES:
                return Kind.MODULE
            if q.startswith("torch."):
                return Kind.TENSOR
        return None

    def class_of(self, unit: Unit) -> ast.ClassDef | None:
        """The class whose ``self`` a unit sees (the method's class, also for lambdas made inside a method)."""
        while unit is not None:
            if unit.cls is not None:
                return unit.cls
            unit = unit.parent
        return None
