"""Every bundled task's hand-written reference solution matches the task (CPU, Triton interpreter)."""

from pathlib import Path

import pytest

from tests.helpers.reference_check import check_solution

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "tritonrl" / "tasks" / "bundled"
TASK_FILES = sorted(BUNDLED.glob("level*/*.py"))


@pytest.mark.parametrize("task_file", TASK_FILES, ids=[p.stem for p in TASK_FILES])
def test_reference_solution_matches(task_file):
    solution = BUNDLED / "solutions" / task_file.name
    assert solution.exists(), f"no reference solution for {task_file.name}"
    check_solution(task_file.read_text(), solution.read_text())


def test_suite_size():
    levels = [p.parent.name for p in TASK_FILES]
    assert levels.count("level1") >= 12
    assert levels.count("level2") >= 24
