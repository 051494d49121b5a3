"""Every bundled reference solution still matches its task when the task's shape constants change.

Catches solutions that hard-code a shape (a block size equal to the row length, a grid computed from a
constant, a missing mask): each module-level integer constant above SMALL_INT is rewritten by the first of
SHIFTS that the task's own Model accepts (``v * 3 // 4 + 1``, usually odd; else halving or doubling, which keep
divisibility by group counts), and the solution is checked again on one seed.
Run: ``pytest tests/tasks/test_bundled_shapes.py -q``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from tests.helpers.reference_check import check_solution, load_module

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "tritonrl" / "tasks" / "bundled"
TASK_FILES = sorted(BUNDLED.glob("level*/*.py"))

# Ints this small are hyper-parameters (kernel size, stride, padding, groups), not sizes worth shifting.
SMALL_INT = 4


# Tried in order; the first is the most telling (odd sizes), the others keep divisibility (GroupNorm groups).
SHIFTS = {
    "three_quarters_plus_one": lambda v: v * 3 // 4 + 1,
    "half": lambda v: v // 2,
    "double": lambda v: v * 2,
}


def shift_int_constants(source: str, shift=SHIFTS["three_quarters_plus_one"]) -> tuple[str, dict]:
    """The source with each module-level ``name = <int>`` above SMALL_INT shifted, and {name: (old, new)}."""
    lines = source.splitlines(keepends=True)
    changes: dict[str, tuple[int, int]] = {}
    edits = []
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if not (isinstance(value, ast.Constant) and type(value.value) is int and value.value > SMALL_INT):
            continue
        if value.lineno != value.end_lineno:
            continue
        new = shift(value.value)
        changes[node.targets[0].id] = (value.value, new)
        edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, str(new)))
    # Right to left, so earlier offsets on the same line stay valid.
    for line_no, start, end, text in sorted(edits, reverse=True):
        line = lines[line_no]
        lines[line_no] = line[:start] + text + line[end:]
    return "".join(lines), changes


def input_shapes(module) -> list:
    torch.manual_seed(0)
    return [tuple(x.shape) if isinstance(x, torch.Tensor) else x for x in module.get_inputs()]


def test_shift_rewrites_only_large_int_constants():
    source = "import torch\nbatch_size = 16\ndim = 1000\nstride = 2\neps = 1e-5\nflag = True\n"
    shifted, changes = shift_int_constants(source)
    assert changes == {"batch_size": (16, 13), "dim": (1000, 751)}
    module = load_module(shifted, "shifted")
    assert (module.batch_size, module.dim, module.stride) == (13, 751, 2)
    assert module.eps == 1e-5 and module.flag is True


def test_shifted_shapes_catch_a_hard_coded_size():
    task = (BUNDLED / "level1" / "l1_mean_dim.py").read_text()
    solution = (BUNDLED / "solutions" / "l1_mean_dim.py").read_text()
    hard_coded = solution.replace("/ n_cols)", "/ 1500)")
    assert hard_coded != solution and "dim = 1500" in task
    check_solution(task, hard_coded, seeds=(0,))
    with pytest.raises(AssertionError):
        check_solution(shift_int_constants(task)[0], hard_coded, seeds=(0,))


def reference_accepts(module) -> bool:
    try:
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        with torch.no_grad():
            model(*module.get_inputs())
    except (RuntimeError, ValueError, AssertionError):  # the task forbids these shapes (e.g. groups must divide)
        return False
    return True


@pytest.mark.parametrize("task_file", TASK_FILES, ids=[p.stem for p in TASK_FILES])
def test_solution_matches_on_shifted_shapes(task_file):
    solution = BUNDLED / "solutions" / task_file.name
    if not solution.exists():
        pytest.skip("no reference solution (test_bundled_solutions reports this)")
    source = task_file.read_text()
    original = load_module(source, "original")
    for shift in SHIFTS.values():
        shifted, changes = shift_int_constants(source, shift)
        if not changes:
            pytest.skip("no integer shape constants to shift")
        variant = load_module(shifted, "variant")
        if input_shapes(original) == input_shapes(variant):
            pytest.skip(f"shifting {sorted(changes)} leaves the input shapes unchanged")
        if reference_accepts(variant):
            check_solution(shifted, solution.read_text(), seeds=(0,))
            return
    pytest.skip(f"the reference rejects every shift of {sorted(changes)} ({', '.join(SHIFTS)})")
