"""Static checks on candidate code, run before any of it executes (the ``static`` stage of the funnel).

    from tritonrl.verify.static import run_static_checks, CHECKS
    run_static_checks(code)                 # [] when the code passes
    run_static_checks(code, strict=False)   # permissive: skips the strict-only checks (torch compute, streams)

Each check is a small function with a one-line rationale (its docstring), registered in ``CHECKS`` with its flag.
Everything is read from the AST (``scope.Scope``, built once per candidate): comments and strings never trigger
or hide a check. A syntax error stops the checks; otherwise every check runs and all violations are returned,
sorted by line. docs/verifier.md has the full table of decisions.

The package:
  scope.py      the shared analysis: import aliases and qualified names, ModelNew, its forward path
  kinds.py      value kinds (tensor / metadata / nn module / container) on the forward path
  structure.py  syntax, ModelNew, a Triton kernel, try/except fallbacks, reference ``Model`` reuse
  compute.py    strict mode: PyTorch compute on the forward path instead of Triton
  safety.py     harness safety: tampering, threads and side streams, process exits, imports, torch.compile
  values.py, objects.py, files.py   values that leave tensors, attribute escapes, file access
  facts.py      what the checks read from torch, triton and numpy, kept across processes (no torch import
                once seen)
  vocab.py      the names every check shares (imports, torch's compute and layout API, files, processes); the
                check modules import it and the shared analysis, never each other

Adding a check (a hack found gets a fixture kernel before it gets a fix):
  1. write a fixture that exhibits the hack in ``tests/verify/fixtures/static/`` with the header
     ``# expect: <flag>`` and watch ``tests/verify/test_static.py`` fail on it;
  2. write ``check_<name>(scope)`` in the module of its concept: a generator of ``(node, message)`` whose
     docstring is the one-line rationale, and whose message names the construct and what to do instead;
  3. register it in ``CHECKS`` below with its ``Flag`` (``strict_only=True`` if only strict mode runs it).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tritonrl.util.astlock import parse_source
from tritonrl.verify.shared.flags import RATIONALE, Flag
from tritonrl.verify.shared.verdict import MAX_ERROR_CHARS, clip_words
from tritonrl.verify.static import facts
from tritonrl.verify.static.compute import check_torch_compute
from tritonrl.verify.static.files import check_file_access
from tritonrl.verify.static.objects import check_attribute_escapes
from tritonrl.verify.static.safety import (
    check_forbidden_imports,
    check_harness_settings,
    check_process_exit,
    check_side_streams,
    check_tampering,
    check_threads,
    check_torch_compile,
)
from tritonrl.verify.static.scope import Scope
from tritonrl.verify.static.structure import (
    check_modelnew,
    check_reference_reuse,
    check_syntax,
    check_triton_kernel,
    check_try_except,
)
from tritonrl.verify.static.vocab import ALLOWED_IMPORTS, ALLOWED_TORCH, LAYOUT_METHODS

__all__ = [
    "ALLOWED_IMPORTS",
    "ALLOWED_TORCH",
    "CHECKS",
    "LAYOUT_METHODS",
    "Check",
    "StaticViolation",
    "describe_checks",
    "diagnosis",
    "run_static_checks",
]


@dataclass(frozen=True)
class StaticViolation:
    """One reason to reject: the flag, a model-readable message naming the construct, and its line."""

    flag: Flag
    message: str
    line: int | None = None
    check: str = ""
    width: int | None = None  # characters of code the construct spans (nested sub-expressions: the smallest)


@dataclass(frozen=True)
class Check:
    name: str
    flag: Flag
    run: Callable[[Scope], Iterator[tuple[ast.AST | None, str]]]
    strict_only: bool = False

    @property
    def rationale(self) -> str:
        return " ".join((self.run.__doc__ or "").split())


CHECKS: list[Check] = [
    Check("syntax", Flag.SYNTAX_ERROR, check_syntax),
    Check("modelnew", Flag.NO_MODELNEW, check_modelnew),
    Check("triton_kernel", Flag.NO_TRITON_KERNEL, check_triton_kernel),
    Check("try_except", Flag.TRY_EXCEPT_FALLBACK, check_try_except),
    Check("reference_reuse", Flag.REFERENCE_REUSE, check_reference_reuse),
    Check("torch_compute", Flag.TORCH_COMPUTE, check_torch_compute, strict_only=True),
    Check("torch_compile", Flag.TORCH_COMPILE, check_torch_compile),
    Check("tampering", Flag.TAMPERING, check_tampering),
    Check("attribute_escapes", Flag.TAMPERING, check_attribute_escapes),
    Check("threads", Flag.THREADS, check_threads),
    Check("side_streams", Flag.THREADS, check_side_streams, strict_only=True),
    Check("harness_settings", Flag.TAMPERING, check_harness_settings),
    Check("process_exit", Flag.PROCESS_EXIT, check_process_exit),
    Check("forbidden_imports", Flag.FORBIDDEN_IMPORT, check_forbidden_imports),
    Check("file_access", Flag.FILE_ACCESS, check_file_access),
]


def run_static_checks(code: str, strict: bool = True) -> list[StaticViolation]:
    """Every static violation in ``code`` (empty when it passes); a syntax error is reported alone."""
    try:
        tree = parse_source(code)
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes in the source
        line = getattr(e, "lineno", None)
        return [StaticViolation(Flag.SYNTAX_ERROR, f"syntax error: {getattr(e, 'msg', e)}", line, "syntax")]
    scope = Scope(tree)
    found: dict[tuple, StaticViolation] = {}
    for check in CHECKS:
        if check.strict_only and not strict:
            continue
        for node, message in check.run(scope):
            line = getattr(node, "lineno", None)
            found.setdefault(
                (check.flag, line, message),
                StaticViolation(check.flag, f"{check.flag.value}: {message}", line, check.name, _width(node)),
            )
    facts.save()  # what torch answered, for the next process (a rejection there imports no torch)
    return sorted(found.values(), key=lambda v: (v.line or 0, v.flag.value))


def diagnosis(violations: list[StaticViolation], limit: int = MAX_ERROR_CHARS) -> str:
    """A static failure's error text: one diagnosis per line of code, the most specific there (the smallest
    construct: ``x ** 3`` rather than the expression around it), in line order, as many whole ones as fit
    ``limit`` characters, then how many more lines have violations; never cut mid-word."""
    chosen: dict[object, StaticViolation] = {}
    for v in violations:  # in line order (run_static_checks)
        key = v.line if v.line is not None else v.message
        if key not in chosen or (v.width or 1 << 30) < (chosen[key].width or 1 << 30):
            chosen[key] = v
    texts = [f"line {v.line}: {v.message}" if v.line else v.message for v in chosen.values()]
    shown: list[str] = []
    for i, text in enumerate(texts):
        tail = _more(len(texts) - i - 1)
        if shown and len("; ".join([*shown, text])) + len(tail) > limit:
            break
        shown.append(text)
    return clip_words("; ".join(shown) + _more(len(texts) - len(shown)), limit)


def _more(lines: int) -> str:
    return f"; and {lines} more {'line' if lines == 1 else 'lines'} with violations" if lines else ""


def _width(node: ast.AST | None) -> int | None:
    """How much code ``node`` spans: its characters on one line; many lines count as wider than any one line."""
    if node is None or getattr(node, "end_col_offset", None) is None:
        return None
    lines = (node.end_lineno or node.lineno) - node.lineno
    return node.end_col_offset - node.col_offset if lines == 0 else (lines + 1) * 10_000


def describe_checks() -> list[dict[str, str]]:
    """Name, flag, rationale and mode of every check, for docs and reports."""
    return [
        {
            "name": c.name,
            "flag": c.flag.value,
            "rationale": c.rationale or RATIONALE[c.flag],
            "mode": "strict" if c.strict_only else "always",
        }
        for c in CHECKS
    ]
