"""Hints on a verdict's error: what a failure probably means and what to do, for a user or a model's feedback.

    result = add_hints(result, code, relative_error, task, config, device, reduced)   # in the parent, last

Each hint is a last line ``hint: ...`` of ``VerifyResult.error`` (the error is cut at a word to leave it room) and
never changes a verdict. They come from facts the parent holds: the candidate's code, the task, the config, and
the judge's ``relative_error`` of a value mismatch (its worst error over the output's scale, or its relative L2
error). No reference value is in a hint.

- **reduced precision**: a value mismatch at most ``REDUCED_PRECISION`` of the output's scale looks like
  arithmetic at lower precision than the reference's, not a wrong kernel. When the code calls ``tl.dot`` at its
  default precision (TF32 on a GPU, whose rounding the CPU interpreter emulates: ``child/fidelity.py``) the hint
  names it and ``input_precision="ieee"``; it also names KernelBench's tolerance (``verify.tolerance``).
- **full size under the interpreter**: a timeout of the full trials on a CPU at a task's own sizes (``--full-size``)
  when those are over the default CPU budget: every program instance runs in Python there.
"""

from __future__ import annotations

import ast

from tritonrl.config import VerifyConfig
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.verdict import MAX_ERROR_CHARS, Stage, VerifyResult, clip_words

REDUCED_PRECISION = 3e-2  # TF32 products: ~1e-3 of the output's scale; bf16 ~4e-3; a wrong kernel: ~1
FULL_PRECISION = ("ieee", "tf32x3")  # tl.dot's input_precision values that keep fp32 products


def add_hints(result: VerifyResult, code: str | None, relative_error: float | None, task: KernelTask,
              config: VerifyConfig, device: str, reduced: bool) -> VerifyResult:
    """``result`` with the hints that apply appended to its error (module docstring)."""
    hints = [precision_hint(result, code, relative_error, config),
             full_size_hint(result, task, config, device, reduced)]
    hints = [h for h in hints if h]
    if hints and result.error:
        tail = "\n".join(f"hint: {h}" for h in hints)
        result.error = clip_words(result.error, MAX_ERROR_CHARS - len(tail) - 1) + "\n" + tail
    return result


def precision_hint(result: VerifyResult, code: str | None, relative_error: float | None,
                   config: VerifyConfig) -> str | None:
    mismatch = {Flag.OUTPUT_MISMATCH.value, Flag.TINY_MISMATCH.value} & set(result.flags)
    if not mismatch or relative_error is None or relative_error > REDUCED_PRECISION:
        return None
    looser = "" if config.tolerance == "kernelbench" else \
        ", or judge at KernelBench's tolerance 1e-2 (--tolerance kernelbench)"
    lines = tf32_dot_lines(code or "")
    if lines:
        return (f"the error ({relative_error:.1e} of the output's scale) looks like reduced precision: tl.dot "
                f"(line {lines[0]}) rounds fp32 inputs to TF32 by default, as GPUs do; pass "
                f'input_precision="ieee" to tl.dot for full fp32{looser}')
    return (f"the error ({relative_error:.1e} of the output's scale) looks like reduced precision (fp16/bf16 "
            f'arithmetic, or TF32: tl.dot without input_precision="ieee"); compute in fp32{looser}')


def tf32_dot_lines(code: str) -> list[int]:
    """Lines of ``tl.dot`` calls (``triton.language.dot``, any alias) at TF32: no ``input_precision`` of
    ``FULL_PRECISION`` and no ``allow_tf32=False``."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    aliases = {"tl"} | _language_aliases(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_dot(node.func, aliases) and not _full_precision(node):
            lines.append(node.lineno)
    return sorted(lines)


def _language_aliases(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "triton.language" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            names |= {a.asname or a.name for a in node.names if a.name == "language"}
    return names


def _is_dot(func: ast.AST, aliases: set[str]) -> bool:
    if not (isinstance(func, ast.Attribute) and func.attr == "dot"):
        return False
    base = func.value
    if isinstance(base, ast.Name):
        return base.id in aliases
    return isinstance(base, ast.Attribute) and base.attr == "language" and \
        isinstance(base.value, ast.Name) and base.value.id == "triton"


def _full_precision(call: ast.Call) -> bool:
    for keyword in call.keywords:
        value = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
        if keyword.arg == "input_precision" and value in FULL_PRECISION:
            return True
        if keyword.arg == "allow_tf32" and value is False:
            return True
    return False


def full_size_hint(result: VerifyResult, task: KernelTask, config: VerifyConfig, device: str,
                   reduced: bool) -> str | None:
    from tritonrl.verify.parent.plan import within_budget

    if device != "cpu" or reduced or result.stage is not Stage.FULL or Flag.TIMEOUT.value not in result.flags:
        return None
    if config.cpu_max_numel is not None or config.cpu_max_flops is not None:
        return None  # a budget was kept: reduced when it could be (cpu_size_limit says when it could not)
    if within_budget(task.source, VerifyConfig()) is not False:
        return None  # small enough that the interpreter is not the reason
    return ("the full trials ran at the task's own sizes (--full-size), over the CPU budget, under Triton's "
            "interpreter, which runs every program instance in Python: drop --full-size to judge at reduced "
            "shapes, judge on a GPU, or give a longer --timeout")
