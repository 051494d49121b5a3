"""The file-access check: every route from candidate code to the file system (both modes).

The child runs as the same user as the verifier, so a file read can reach the reference cache and a write can
forge status files. Routes: the builtin ``open``; file modules (``io``, ``pathlib``, ``shutil``, ``glob``,
``tempfile``, ``mmap`` ...); ``os`` beyond an exact allowlist (environment reads, pure-string ``os.path``
helpers, ``cpu_count``, ``getpid``); numpy and torch serialization and memory-mapping (``np.load``,
``np.memmap``, ``torch.load``, ``torch.from_file``, ``UntypedStorage.from_file``, ``torch.hub`` ...); and the
methods that reach a file whatever their receiver (``.tofile``, ``.from_file``, ``.read_bytes`` ...).
Limits: a file object handed in from outside, or one reached through a hole in the other checks (a module
object passed as a value is tampering), is not seen; the sandbox is not a security boundary (docs/verifier.md).
"""

from __future__ import annotations

import ast

from tritonrl.verify.static.names import excerpt, names_something
from tritonrl.verify.static.vocab import (
    EXIT_NAMES,
    FILE_METHODS,
    FILE_MODULES,
    FILE_QUALNAMES,
    OS_ALLOWED,
    PROCESS_CALLS,
)


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
    return []


def file_route(scope, node: ast.AST) -> str | None:
    """Why ``node`` reaches the file system, or None."""
    for name in _imported(node):
        top = name.split(".")[0]
        if (
            top in FILE_MODULES
            or name.startswith(FILE_QUALNAMES)
            or (top == "os" and "." in name and name not in OS_ALLOWED and not name.startswith("os.environ"))
        ):
            return f"`import {name}` reaches the file system"
    if isinstance(node, ast.Name) and node.id == "open" and node.id not in scope.aliases:
        return "`open` reads or writes files"
    if names_something(node):
        q = scope.qualname(node) or ""
        top = q.split(".")[0]
        if top in FILE_MODULES and top in scope.imported:
            return f"`{excerpt(node)}` uses {top}, a file-system module"
        if q.startswith(FILE_QUALNAMES) and (isinstance(node, ast.Name) or scope.is_module_ref(node)):
            return f"`{excerpt(node)}` reads or writes files ({q})"
        if isinstance(node, ast.Attribute) and node.attr in FILE_METHODS:
            return f"`{excerpt(node)}` reaches a file"
    return None


def os_route(scope, node: ast.AST) -> str | None:
    """``os.<name>`` outside the exact allowlist (checked where the chain is complete: its outermost node)."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    q = scope.qualname(node) or ""
    if not q.startswith("os.") or not scope.is_module_ref(node) or q in ("os.putenv", "os.unsetenv"):
        return None
    parent = scope.coverage.parents.get(id(node))
    if isinstance(parent, ast.Attribute) and parent.value is node and q in ("os.path", "os.environ"):
        return None  # judged at the longer chain
    if q in OS_ALLOWED or q.startswith(("os.environ.", *PROCESS_CALLS)) or q in EXIT_NAMES:
        return None  # processes and exits have their own checks
    return (
        f"`{excerpt(node)}`: {q} is file-system or OS access (allowed: environment reads, os.path.join ...)"
    )


def check_file_access(scope):
    """Reading or writing files (open, numpy/torch save/load, os/pathlib file calls) can reach the harness's data."""
    for node in scope.nodes:
        msg = file_route(scope, node) or os_route(scope, node)
        if msg:
            yield node, msg
