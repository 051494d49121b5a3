"""The attribute-escape check: attribute chains and values that reach a module or an introspection handle.

Every other check reads qualified names (``scope.qualname``), so anything that reaches a module by another road
defeats them all: ``np.os``, ``torch.sys``, ``os.path.os.sys.modules``, ``triton.runtime.jit.sys``,
``math.__loader__``, ``(torch.nn.functional,)[0]``, ``g = F``. The rules, in both modes (flag ``tampering``):
  - a chain is judged link by link on the real objects (allowed modules are imported lazily, attributes read
    with ``inspect.getattr_static`` so nothing runs): a link that yields a module must be a true submodule of
    its parent (``torch.nn``, ``tl.math``), or the one allowlisted alias ``os.path``;
  - a private link of a module (``torch._C``, ``random._os``) and a dunder other than a few harmless ones
    (``__name__``, ``__init__``, ``__class__``, arithmetic) are rejected;
  - a module object used as a value (assigned, in a container, passed, returned, subscripted) is rejected,
    except ``getattr(module, "const")`` / ``hasattr`` and the handler of a module-level import-only ``try``;
  - torch's interception and registration APIs (``torch.overrides``, ``torch.library``, global module hooks)
    can hide compute from the runtime dispatch monitor.
Limits: objects the candidate builds itself are not resolved (``type(x)``); the runtime checks are the backstop.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import types

from tritonrl.verify.static.facts import MODULES, remembered
from tritonrl.verify.static.names import excerpt, import_only, is_dunder
from tritonrl.verify.static.vocab import (
    ALLOWED_IMPORTS,
    ARITH_DUNDERS,
    COMPILERS,
    EXIT_NAMES,
    FOREIGN_CODE,
    RAW_MEMORY_ATTRS,
    RAW_MEMORY_QUALNAMES,
    STORAGE_INTERNALS,
)

# fmt: off
SAFE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__version__", "__init__", "__class__",
    "__call__", "__len__", "__post_init__", "__annotations__"})
MODULE_ALIASES = frozenset({"os.path"})  # a module reached under a name that is not its own
RISKY_NAMES = frozenset({"sys", "os", "builtins", "importlib", "inspect", "gc", "ctypes", "subprocess", "io",
    "pathlib", "shutil", "types", "posix", "nt", "marshal", "pickle", "socket", "threading", "multiprocessing",
    "signal", "atexit", "runpy", "pkgutil", "site", "tempfile", "glob", "mmap", "linecache", "traceback",
    "modules", "weakref", "code", "codeop"})
INTERCEPTION = ("torch.overrides", "torch.library", "torch.utils._python_dispatch", "torch._C",
    "torch.nn.modules.module.register_module_", "torch.utils.hooks", "torch.autograd.graph",
    "torch._library", "torch._ops", "torch.fx", "torch.ops.load_library")
# fmt: on
_MISSING = object()


@functools.cache
def _root(name: str) -> object:
    """The allowed module ``name``, imported; ``_MISSING`` when it is not installed. Any other failure raises and
    is not remembered: a module that failed to import once (say, two threads importing torch and Triton at the same
    time, which importlib can fail as a deadlock) must not be taken for a missing one for the rest of the process."""
    if name not in ALLOWED_IMPORTS or name == "__future__":
        return _MISSING
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return _MISSING


def import_known_modules() -> None:
    """Imports torch, Triton and numpy (those installed) in the calling thread, before the verifier's threads
    resolve names in them: torch's and Triton's imports of each other are not thread-safe (a thread importing
    ``triton`` while another imports ``torch.utils.flop_counter`` fails one of them in importlib as a deadlock and
    the other with ``KeyError: 'triton'``), so a process imports them once, up front."""
    for name in MODULES:
        _root(name)
    importlib.import_module("torch.utils.flop_counter")  # imports triton's JIT (tritonrl.tasks.variants.task_cost)


def resolve(q: str) -> object:
    """The object a qualified name names, read without running code, or ``_MISSING``."""
    parts = q.split(".")
    obj = _root(parts[0])
    for attr in parts[1:]:
        if obj is _MISSING:
            return _MISSING
        child = inspect.getattr_static(obj, attr, _MISSING)
        if child is _MISSING and isinstance(obj, types.ModuleType):
            child = sys.modules.get(f"{obj.__name__}.{attr}", _MISSING)
        obj = child
    return obj


def named(q: str) -> tuple[str, str]:
    """What ``q`` names, as the checks need it: ("missing", ""), ("module", its __name__) or ("object", "").
    Answers about torch, triton and numpy are remembered across processes (``tritonrl.verify.static.facts``)."""
    if q.split(".", 1)[0] not in MODULES:
        return _describe(q)
    return tuple(remembered("named", q, lambda: list(_describe(q))))


def _describe(q: str) -> tuple[str, str]:
    obj = resolve(q)
    if obj is _MISSING:
        return "missing", ""
    return ("module", getattr(obj, "__name__", "")) if isinstance(obj, types.ModuleType) else ("object", "")


def _link_escape(scope, node: ast.Attribute) -> str | None:
    """Why the link ``<parent>.<attr>`` escapes, or None."""
    if node.attr in STORAGE_INTERNALS:  # whatever the receiver: a storage is rarely known as one here
        return "a private method of torch's storages, which moves tensor bytes outside torch's ops"
    if is_dunder(node.attr):
        return None if node.attr in SAFE_DUNDERS or _arith_dunder(node.attr) else "an introspection handle"
    if not scope.is_module_ref(node):
        return None
    q, parent_q = scope.qualname(node) or "", scope.qualname(node.value) or ""

    if q in EXIT_NAMES or q.startswith((*COMPILERS, *FOREIGN_CODE)):
        return None  # their own checks
    (parent, parent_name), (child, child_name) = named(parent_q), named(q)
    if child == "missing":
        if parent == "module":
            return f"the module {node.attr}" if node.attr in RISKY_NAMES else None
        return None
    if child == "module":
        if q in MODULE_ALIASES or (parent == "module" and child_name == f"{parent_name}.{node.attr}"):
            return None
        return f"the module {child_name}"
    if node.attr.startswith("_") and parent == "module":
        return "a private internal"
    return None


def _raw_memory(scope, node: ast.AST, q: str) -> str | None:
    """numpy addressing raw memory (``RAW_MEMORY_QUALNAMES``, an array's ``.ctypes``), or building an
    ``np.ndarray`` directly (over a buffer, at an offset, with strides): what it reaches, or None."""
    if q.startswith(RAW_MEMORY_QUALNAMES):
        return "addresses raw memory"
    if isinstance(node, ast.Attribute) and node.attr in RAW_MEMORY_ATTRS and not scope.is_module_ref(node.value):
        return "hands out an array's address"
    parent = scope.coverage.parents.get(id(node))
    if q == "numpy.ndarray" and isinstance(parent, ast.Call) and parent.func is node:
        return "builds an array over raw memory"
    return None


def _arith_dunder(name: str) -> bool:

    return name in ARITH_DUNDERS


def _module_value(scope, node: ast.AST, portable: set[int]) -> bool:
    """A module object used as a value, not as the base of an attribute or a constant getattr."""
    if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
        return False
    if id(node) in portable or not scope.is_module_ref(node):
        return False
    parent = scope.coverage.parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node:
        return False
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in ("getattr", "hasattr")
        and parent.args
        and parent.args[0] is node
    ):
        return False
    if isinstance(parent, ast.Call) and parent.func is node:
        return False
    return named(scope.qualname(node) or "")[0] == "module" or _bound_as_module(scope, node)


def _bound_as_module(scope, node: ast.AST) -> bool:
    """Unresolvable, but bound by ``import x`` / ``import x.y as z`` (always a module)."""
    return isinstance(node, ast.Name) and node.id in scope.plain_imports


def check_attribute_escapes(scope):
    """An attribute chain or value that reaches a module or introspection handle hides what the code uses."""
    portable = {
        id(n)
        for t in scope.tree.body
        if isinstance(t, ast.Try) and import_only(t)
        for h in t.handlers
        for n in ast.walk(h)
    }
    for node in scope.nodes:
        if isinstance(node, ast.Attribute):
            why = _link_escape(scope, node)
            if why:
                yield node, f"`{excerpt(node)}` reaches {why}; use only the documented API"
                continue
        if isinstance(node, (ast.Name, ast.Attribute)):
            q = scope.qualname(node) or ""
            raw = _raw_memory(scope, node, q)
            if raw:
                yield node, f"`{excerpt(node)}` {raw}: numpy would read or write tensor memory unwatched"
                continue
            if q.startswith(INTERCEPTION) and scope.is_module_ref(node):
                yield node, f"`{excerpt(node)}` ({q}) intercepts or registers torch operations"
            elif _module_value(scope, node, portable):
                yield node, f"`{excerpt(node)}` uses the module {q} as a value, hiding what is called"
