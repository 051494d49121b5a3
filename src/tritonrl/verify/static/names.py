"""Small AST helpers shared by the static checks (no analysis state)."""

from __future__ import annotations

import ast


def dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, with ``getattr(a.b, "c")`` read as ``a.b.c`` (the same thing by
    meaning: every check that reads names reads both); no alias resolution; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    name = const_getattr(node)
    if name is not None:
        base = dotted(node.args[0])
        return f"{base}.{name}" if base else None
    return None


def const_getattr(node: ast.AST) -> str | None:
    """The attribute name of ``getattr(obj, "name"[, default])``, else None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2):
        return const_str(node.args[1])
    return None


def attribute_name(node: ast.AST) -> str | None:
    """The attribute a node reads: ``x.name`` or ``getattr(x, "name")``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return const_getattr(node)


def names_something(node: ast.AST) -> bool:
    """A node that names an object: ``a``, ``a.b``, or ``getattr(a, "b")`` with a constant name (the same
    thing spelled as a call; ``Scope.qualname`` resolves all three alike, so name-based checks look at all three)."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
            and len(node.args) >= 2 and const_str(node.args[1]) is not None)


def const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_dunder(name: str | None) -> bool:
    return isinstance(name, str) and len(name) > 4 and name.startswith("__") and name.endswith("__")


def excerpt(node: ast.AST, limit: int = 60) -> str:
    """The node's source, shortened for a violation message."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def import_only(node: ast.Try) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body)
