"""One lock around building Python ASTs, so that threads never build two at once.

    from tritonrl.util.astlock import parse_source, compile_source
    tree = parse_source(code)                          # ast.parse, under the lock
    code_object = compile_source(source, "<task>")     # compile, under the lock

Why: CPython 3.11 converts a parsed tree to ``ast`` objects with one interpreter-wide recursion counter
(python/cpython#106905). When two threads do it at once and the GIL changes hands mid-conversion (a garbage
collection that runs a finalizer is enough), one of them fails with ``SystemError: AST constructor recursion
depth mismatch``. The ``Verifier`` extracts, checks and plans candidates in a thread pool, so without this lock
an honest kernel could be failed by the race. Every ``ast.parse`` and ``compile`` of candidate or task code in
the parent goes through here (``tests/util/test_astlock.py`` hammers it from threads). Parsing takes milliseconds;
the lock costs nothing that shows.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

# Re-entrant: a finalizer that runs inside a parse on this thread may parse too.
AST_LOCK = threading.RLock()


def parse_source(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)`` with no other thread building an AST meanwhile."""
    with AST_LOCK:
        return ast.parse(source, filename, mode)


def compile_source(source: str | ast.AST, filename: str, mode: str = "exec") -> CodeType:
    """``compile(source, filename, mode)`` under the same lock (compiling an AST object reads it with that
    counter too)."""
    with AST_LOCK:
        return compile(source, filename, mode)
