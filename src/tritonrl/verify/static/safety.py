"""Static checks that keep the candidate from fooling the harness: tampering, threads and streams, process exits,
imports outside an allowlist (``ALLOWED_IMPORTS``), and torch.compile writing the kernel for it.

Imports: an allowlist; threads, exits and introspection modules get their own flags (threads, process_exit,
tampering), so ``check_forbidden_imports`` skips them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from tritonrl.verify.static.names import names_something
from tritonrl.verify.static.scope import Scope, const_str, dotted, excerpt, import_only, is_dunder
from tritonrl.verify.static.vocab import (
    ALLOWED_IMPORTS,
    COMPILERS,
    DYNAMIC_NAMES,
    EXIT_MODULES,
    EXIT_NAMES,
    FILE_MODULES,
    FOREIGN_CODE,
    GLOBAL_STATE_CALLS,
    HARNESS_SETTINGS,
    INTROSPECTION_ATTRS,
    INTROSPECTION_MODULES,
    PROCESS_CALLS,
    SIDE_STREAMS,
    SYS_ALLOWED,
    TAMPERING_FIELDS,
    TAMPERING_STRINGS,
    THREAD_MODULES,
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_tampering(scope: Scope):
    """Patching torch/triton/numpy/builtins/timers, sys.modules or namespaces can fool the harness."""
    portable = {
        id(n)
        for t in scope.tree.body
        if isinstance(t, ast.Try) and import_only(t)
        for h in t.handlers
        for n in ast.walk(h)
    }
    for node in scope.nodes:
        msg = _tampering_name(node)
        if msg:
            yield node, msg
        if isinstance(node, ast.Assign) and id(node) not in portable:
            for t in node.targets:
                for n in _store_targets(t):
                    if isinstance(n, ast.Name) and n.id in scope.imported:
                        yield node, f"`{n.id} = ...` rebinds the imported name {n.id}"
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("fn", "src", "__wrapped__")
            and dotted(node.value) in scope.kernel_names
        ):
            yield (
                node,
                f"`{excerpt(node)}` reaches the kernel's Python body; launch it with kernel[grid](...)",
            )
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                msg = _tampering_store(scope, t)
                if msg:
                    yield node, msg
        elif isinstance(node, ast.Call):
            msg = _tampering_call(scope, node)
            if msg:
                yield node, msg
        elif isinstance(node, (ast.Name, ast.Attribute)):
            msg = _tampering_ref(scope, node)
            if msg:
                yield node, msg
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings(scope):
            named = node.value if node.value in TAMPERING_STRINGS else next(
                (w for w in _WORD.findall(node.value) if w in TAMPERING_FIELDS), None)
            if named:  # a name, or a field path inside a format string ("{0.f_back}", Formatter().get_field)
                yield node, f"the string {node.value[:60]!r} names {named!r}, an introspection handle or the " \
                            "harness's internals"
        if isinstance(node, ast.MatchClass):  # `case object(f_back=b)` reads the attribute by that name
            for name in node.kwd_attrs:
                if name in TAMPERING_STRINGS:
                    yield node, f"`case ...({name}=...)`: frame or object-graph introspection is not allowed"
        if isinstance(node, ast.Name) and node.id in ("getattr", "hasattr") and node.id not in scope.aliases \
                and not _called(scope, node):
            yield node, f"`{node.id}` used as a value hides which attribute is read; call it with a constant name"
        elif isinstance(node, ast.ClassDef):
            msg = _tampering_class(scope, node)
            if msg:
                yield node, msg
        elif isinstance(node, ast.alias) and node.name.split(".")[0] in INTROSPECTION_MODULES:
            yield node, f"`import {node.name}`: introspection of the harness is not allowed"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in INTROSPECTION_MODULES:
            yield node, f"`from {node.module} import ...`: introspection of the harness is not allowed"


def _called(scope: Scope, node: ast.AST) -> bool:
    parent = scope.coverage.parents.get(id(node))
    return isinstance(parent, ast.Call) and parent.func is node


def docstrings(scope: Scope) -> set[int]:
    """id() of the constant nodes that are docstrings (module, classes, functions): prose, not names."""
    cached = getattr(scope, "_docstrings", None)
    if cached is None:
        cached = set()
        for node in scope.nodes:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    cached.add(id(first.value))
        scope._docstrings = cached
    return cached


def _store_targets(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            yield from _store_targets(t)
    elif isinstance(target, ast.Starred):
        yield from _store_targets(target.value)
    else:
        yield target


def _tampering_store(scope: Scope, target: ast.AST) -> str | None:
    for t in _store_targets(target):
        if isinstance(t, ast.Attribute):
            root = dotted(t.value)
            if scope.is_module_ref(t.value):
                return f"`{excerpt(t)} = ...` patches {scope.qualname(t.value)}"
            if is_dunder(t.attr):
                return f"`{excerpt(t)} = ...` overrides a special attribute"
            if root and root.split(".")[0] in scope.classes and root != "self":
                return f"`{excerpt(t)} = ...` rebinds a class attribute after its definition"
            if root == "self" and t.attr in ("forward", "__call__", "_call_impl", "_wrapped_call_impl"):
                return f"`{excerpt(t)} = ...` replaces forward at run time, hiding it from the checks"
        elif isinstance(t, ast.Subscript):
            q = scope.qualname(t.value) or ""
            if scope.is_module_ref(t.value) or q.startswith("os.environ"):
                return f"`{excerpt(t)} = ...` writes into {q}"
    return None


def _tampering_call(scope: Scope, node: ast.Call) -> str | None:
    q = scope.qualname(node.func) or ""
    if q in ("setattr", "delattr") and node.args:
        obj, name = node.args[0], const_str(node.args[1]) if len(node.args) > 1 else None
        if scope.is_module_ref(obj) or isinstance(obj, ast.Call) or (dotted(obj) or "") in scope.classes:
            return f"`{excerpt(node)}` patches {excerpt(obj)}"
        if name is None or is_dunder(name) or name in ("forward", "_call_impl"):
            return f"`{excerpt(node)}`: setattr with a computed or special name hides what is patched"
    if q in GLOBAL_STATE_CALLS:
        return (
            f"`{excerpt(node)}` changes global state the harness relies on (seeds, default dtype, precision)"
        )
    if q.startswith("os.environ.") and q.rsplit(".", 1)[-1] not in ("get", "copy", "keys", "items", "values"):
        return f"`{excerpt(node)}` changes the harness's environment"
    if q in ("getattr", "hasattr") and len(node.args) >= 2 and const_str(node.args[1]) is None:
        return f"`{excerpt(node)}`: an attribute reached by a computed name hides what is used"
    if q in ("getattr", "hasattr") and len(node.args) >= 2 and is_dunder(const_str(node.args[1])):
        return f"`{excerpt(node)}`: a special attribute by name hides what is used"
    if q in ("operator.attrgetter", "operator.methodcaller"):
        return f"`{excerpt(node)}`: attributes reached by string hide what is used"
    return None


def _tampering_name(node: ast.AST) -> str | None:
    """Binding ``__name__`` (any way) would turn the main-block exemption into a way to hide code."""
    if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
        return "`__name__` is rebound; the main-block exemption relies on it"
    names = (
        [node.arg]
        if isinstance(node, ast.arg)
        else [node.name]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        else [a.asname or a.name for a in node.names]
        if isinstance(node, (ast.Import, ast.ImportFrom))
        else node.names
        if isinstance(node, (ast.Global, ast.Nonlocal))
        else []
    )
    if "__name__" in names:
        return "`__name__` is rebound; the main-block exemption relies on it"
    return None


def _tampering_ref(scope: Scope, node: ast.Name | ast.Attribute) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and node.attr in INTROSPECTION_ATTRS
        and dotted(node) != "self.__dict__"
    ):
        return f"`{excerpt(node)}`: frame or object-graph introspection is not allowed"
    if isinstance(node, ast.Attribute) and node.attr in ("in_launch", "candidate_in_launch"):
        return f"`{excerpt(node)}` reaches the verifier's watch"
    q = scope.qualname(node) or ""
    if isinstance(node, ast.Name) and node.id in DYNAMIC_NAMES and node.id not in scope.aliases:
        return f"`{node.id}`: dynamic code or namespace access hides what the code does"
    if (
        q.startswith("sys.")
        and isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and q not in SYS_ALLOWED
    ):
        return f"`{excerpt(node)}`: {q} can reach or replace the harness's modules and frames"
    if q in ("os.putenv", "os.unsetenv"):
        return f"`{excerpt(node)}` changes the harness's environment"
    return None


def _tampering_class(scope: Scope, node: ast.ClassDef) -> str | None:
    if any((scope.qualname(b) or "") in ("torch.Tensor", "torch._C.TensorBase") for b in node.bases):
        return f"`class {node.name}` subclasses torch.Tensor; outputs must be plain tensors"
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in (
            "__torch_function__",
            "__torch_dispatch__",
        ):
            return f"`{node.name}.{item.name}` intercepts torch operations"
    return None


def check_threads(scope: Scope):
    """Threads and side processes can finish work outside the timed or checked window."""
    for node in scope.nodes:
        for name in _imported_modules(node):
            if any(name == m or name.startswith(m + ".") for m in THREAD_MODULES):
                yield node, f"`import {name}`: threads and processes are not allowed"
        if names_something(node) and (scope.qualname(node) or "").startswith(
            PROCESS_CALLS
        ):
            yield node, f"`{excerpt(node)}` starts a process"


def check_harness_settings(scope: Scope):
    """Reading the harness's own settings (deterministic mode, the fresh-memory poison) tells watched calls from
    timed ones; a kernel's work must not depend on whether it is watched (the twenty-ninth red team ran its cheap
    path only where the poison was off)."""
    for node in scope.nodes:
        q = (scope.qualname(node) or "") if names_something(node) else ""
        if q and any(q == name or q.startswith(name + ".") for name in HARNESS_SETTINGS):
            yield node, f"`{excerpt(node)}` reads the harness's own settings, which tell watched calls from timed ones"


def check_side_streams(scope: Scope):
    """Work on another CUDA stream can escape the timer (strict mode; the runtime also syncs device-wide)."""
    for node in scope.nodes:
        if names_something(node) and scope.qualname(node) in SIDE_STREAMS:
            yield node, f"`{excerpt(node)}`: launch on the current stream; side streams can escape the timer"


def check_process_exit(scope: Scope):
    """Exiting or signalling the process (os._exit, sys.exit, kill) can skip the checks."""
    for node in scope.nodes:
        for name in _imported_modules(node):
            if name.split(".")[0] in EXIT_MODULES:
                yield node, f"`import {name}`: signals and exit hooks are not allowed"
        if names_something(node) and scope.qualname(node) in EXIT_NAMES:
            yield node, f"`{excerpt(node)}` exits the process"


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return ["." * node.level + (node.module or "")]
        return [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def check_forbidden_imports(scope: Scope):
    """Only kernel-writing modules are allowed: no sockets, files, pickling, C/CUDA source or dynamic imports."""

    flagged_elsewhere = THREAD_MODULES | EXIT_MODULES | INTROSPECTION_MODULES | FILE_MODULES
    for node in scope.nodes:
        names = _imported_modules(node)
        for name in names[:1] if isinstance(node, ast.ImportFrom) else names:
            top = name.split(".")[0]
            if (
                top in flagged_elsewhere
                or top == "__main__"
                or any(name.startswith(m) for m in flagged_elsewhere if "." in m)
            ):
                continue
            if top not in ALLOWED_IMPORTS:
                yield (
                    node,
                    f"`import {name}` is not allowed (allowed: {', '.join(sorted(ALLOWED_IMPORTS)[:8])}, ...)",
                )
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            yield node, f"`from {node.module} import *` hides where names come from; import names explicitly"
        for name in names:
            if name.startswith(FOREIGN_CODE):
                yield node, f"`{name}`: CUDA/C++ source instead of Triton is not allowed"
        if names_something(node):
            q = scope.qualname(node) or ""
            if q.startswith(FOREIGN_CODE) or q.endswith(".load_inline") or q == "load_inline":
                yield node, f"`{excerpt(node)}`: CUDA/C++ source instead of Triton is not allowed"
            elif isinstance(node, ast.Name) and q == "__import__":
                yield node, f"`{q}`: dynamic imports are not allowed"


def check_torch_compile(scope: Scope):
    """torch.compile / Inductor / TorchScript write the kernels for you (their launches pass the launch check)."""
    for node in scope.nodes:
        names = _imported_modules(node)
        if names_something(node):
            names = [scope.qualname(node) or ""]
        for name in names:
            if name.startswith(COMPILERS):
                yield node, f"`{name}` generates the kernel; write the Triton kernel yourself"
                break
