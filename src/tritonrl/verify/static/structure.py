"""Static checks on the answer's shape: it parses, defines ModelNew and a Triton kernel, has no fallback, and
does not reuse the reference ``Model``.

- try: every ``try`` outside ``@triton.jit`` bodies is rejected (``try/finally`` too: ``return`` in ``finally``
  swallows the exception), except a module-level ``try`` whose body only imports (version-portable imports).
  ``contextlib.suppress`` / ``ExitStack`` and any class defining ``__exit__`` are rejected the same way.
- the name ``Model``: any use outside an echoed ``class Model`` body and the exact ``if __name__ == "__main__":``
  block is reference reuse, as is the string ``"Model"`` outside a docstring.
"""

from __future__ import annotations

import ast

from tritonrl.verify.static.scope import Scope, excerpt, import_only, walk_outside_kernels


def check_syntax(scope: Scope):
    """The code must parse as Python."""
    return iter(())  # handled in run_static_checks: a syntax error stops all checks


def check_modelnew(scope: Scope):
    """The answer must define class ModelNew at module level, once, and never rebind it."""
    if scope.modelnew is None:
        yield None, "no `class ModelNew` at module level; define class ModelNew(nn.Module)"
    for node in scope.modelnew_rebound:
        yield node, f"`{excerpt(node)}` rebinds ModelNew; define it once, as a class"


def check_triton_kernel(scope: Scope):
    """The answer must define at least one @triton.jit kernel."""
    if not scope.kernel_nodes:
        yield None, "no @triton.jit kernel defined; write the computation as a @triton.jit kernel"


def check_try_except(scope: Scope):
    """A try (or suppressing context manager) lets a broken kernel fall back to PyTorch silently."""
    top_level = {id(n) for n in scope.tree.body}
    for node in walk_outside_kernels(scope, scope.tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if not (id(node) in top_level and import_only(node)):
                yield (
                    node,
                    (
                        f"`try` at line {node.lineno}: no try/except or try/finally outside kernels "
                        "(only a module-level try around imports is allowed)"
                    ),
                )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
            "__exit__",
            "__aexit__",
        ):
            yield node, f"`def {node.name}`: a context manager can swallow a failing kernel's exception"
        elif isinstance(node, (ast.Attribute, ast.Name)) and scope.qualname(node) in (
            "contextlib.suppress",
            "contextlib.ExitStack",
            "contextlib.AsyncExitStack",
        ):
            yield node, f"`{excerpt(node)}` swallows exceptions around kernel launches"


def check_reference_reuse(scope: Scope):
    """Inheriting from, building or looking up the reference Model computes the answer with it."""
    echoed = scope.classes.get("Model")
    inside = {id(n) for n in ast.walk(echoed)} if echoed is not None else set()
    docstrings = _docstring_ids(scope.tree)
    main = scope.coverage.in_main  # never runs: the harness imports the candidate as "candidate"
    for node in scope.nodes:
        if (id(node) in inside and node is not echoed) or id(node) in main:
            continue
        if isinstance(node, ast.Name) and node.id == "Model":
            yield node, "`Model` (the reference) is used; ModelNew must not inherit from, build or call it"
        elif isinstance(node, ast.Attribute) and node.attr == "Model":
            yield node, f"`{excerpt(node)}` looks up the reference Model"
        elif isinstance(node, ast.Constant) and node.value == "Model" and id(node) not in docstrings:
            yield node, 'the string "Model" is used; looking up the reference by name is reference reuse'
        elif isinstance(node, ast.alias) and (node.name == "Model" or node.name.split(".")[0] == "__main__"):
            yield node, f"`{node.name}` is imported: the reference must not be imported"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "__main__":
            yield node, "`from __main__ import ...` imports the reference module"


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids
