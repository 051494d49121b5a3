"""Static checks: every fixture in fixtures/static/ trips exactly the flags its header names.

A fixture's header says what it must produce: ``# expect: <flag>[, <flag>...]`` or ``# expect: clean`` in strict
mode, and optionally ``# expect-permissive: ...`` for ``strict=False``. Adding a hack = adding a file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tritonrl.verify.shared.flags import RATIONALE, Flag
from tritonrl.verify.static import CHECKS, StaticViolation, describe_checks, run_static_checks

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((Path(__file__).parent / "fixtures" / "static").glob("*.py"))
SOLUTIONS = sorted((ROOT / "src" / "tritonrl" / "tasks" / "bundled" / "solutions").glob("*.py"))
TASKS = sorted((ROOT / "src" / "tritonrl" / "tasks" / "bundled").glob("level*/*.py"))


def expected(path: Path, key: str) -> set[str] | None:
    match = re.search(rf"^# {key}: (.+)$", path.read_text(), re.MULTILINE)
    if match is None:
        return None
    names = {n.strip() for n in match.group(1).split(",")}
    return set() if names == {"clean"} else names


def flags(code: str, strict: bool = True) -> set[str]:
    return {v.flag.value for v in run_static_checks(code, strict=strict)}


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_strict(path):
    want = expected(path, "expect")
    assert want is not None, f"{path.name} has no '# expect:' header"
    assert want <= {f.value for f in Flag}, f"{path.name}: unknown flag in header"
    violations = run_static_checks(path.read_text(), strict=True)
    assert {v.flag.value for v in violations} == want, [v.message for v in violations]


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_fixture_permissive(path):
    got = flags(path.read_text(), strict=False)
    want = expected(path, "expect-permissive")
    if want is not None:
        assert got == want
    assert got <= flags(path.read_text(), strict=True), "permissive mode must never add flags"


def test_every_check_has_rationale_and_a_fixture():
    tripped = {v.check for p in FIXTURES for v in run_static_checks(p.read_text())}
    for check in CHECKS:
        assert check.rationale, f"check {check.name} has no docstring rationale"
        assert check.flag in RATIONALE, f"flag {check.flag} has no RATIONALE entry"
        assert check.name in tripped, f"no fixture trips check {check.name}"
    assert len({c.name for c in CHECKS}) == len(CHECKS)


def test_violations_are_typed_and_name_the_construct():
    code = (Path(__file__).parent / "fixtures" / "static" / "operator_matmul.py").read_text()
    (v,) = run_static_checks(code)
    assert isinstance(v, StaticViolation) and v.flag is Flag.TORCH_COMPUTE
    assert "out @ self.weight" in v.message and "ModelNew.forward" in v.message
    assert code.splitlines()[v.line - 1].strip() == "return out @ self.weight"


def test_syntax_error_stops_other_checks():
    (v,) = run_static_checks("import os\nos._exit(0)\ndef broken(:\n")
    assert v.flag is Flag.SYNTAX_ERROR and v.line == 3


def test_kernel_bodies_are_not_forward_path():
    # tl arithmetic and tl.sum in a @triton.jit body reached from forward are Triton, not torch compute
    code = (Path(__file__).parent / "fixtures" / "static" / "clean_autotune_linear_relu.py").read_text()
    assert "acc +=" in code and run_static_checks(code) == []


def test_docs_table_lists_every_check():
    text = (ROOT / "docs" / "verifier.md").read_text()
    section = text[text.index("## Static checks") :]
    for row in describe_checks():
        assert f"`{row['name']}`" in section and f"`{row['flag']}`" in section


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem for p in SOLUTIONS])
def test_bundled_solution_passes_strict(path):
    assert [v.message for v in run_static_checks(path.read_text(), strict=True)] == []


@pytest.mark.parametrize("path", TASKS, ids=[p.stem for p in TASKS])
def test_reference_models_are_torch_compute(path):
    """Sanity in the other direction: a task's own Model, renamed ModelNew, is rejected in strict mode."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            node.name = "ModelNew"
    code = ast.unparse(tree) + "\n\n@triton.jit\ndef k(x):\n    pass\n"
    assert Flag.TORCH_COMPUTE.value in flags("import triton\n" + code)
