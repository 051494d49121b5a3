"""``benchmarks/mutation.py`` without the verifier: its mutants and its independent oracle (float64 reference,
edge shapes, large values, every access checked against each tensor's extent) on two bundled solutions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script
from tritonrl.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "src" / "tritonrl" / "tasks" / "bundled" / "solutions"


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/mutation.py", "mutation_bench")


@pytest.fixture(scope="module")
def tasks():
    return {t.name: t for t in load_tasks("bundled") if t.name in ("l1_softmax", "l1_sum_dim")}


def test_mutants_are_single_changes_of_many_kinds(bench, tasks):
    source = tasks["l1_softmax"].solution
    mutants = bench.make_mutants("l1_softmax", source, 12)
    assert len(mutants) == len({m.source for m in mutants}) >= 8
    assert {"compare_op", "drop_max_subtraction", "drop_mask", "mask_bound_plus1"} <= {m.kind for m in mutants}
    assert "block_size" in {m.kind for m in bench.make_mutants("l1_sum_dim", tasks["l1_sum_dim"].solution, 40)}
    original = ast.unparse(ast.parse(source))
    for m in mutants:
        assert m.source != original
        ast.parse(m.source)
    assert bench.make_mutants("l1_softmax", source, 12)[0].source == mutants[0].source  # deterministic


def _mutant(bench, tasks, name, kind, tmp_path):
    mutant = next(m for m in bench.make_mutants(name, tasks[name].solution, 40) if m.kind == kind)
    path = tmp_path / f"{name}_{kind}.py"
    path.write_text(mutant.source)
    return path


@pytest.mark.slow  # ~15 s of CPU: the interpreter on 20 input sets (5 shapes x 4 kinds of values)
def test_oracle_passes_originals_and_finds_real_bugs(bench, tasks, tmp_path):
    cases, left_out = bench.oracle_cases(tasks["l1_softmax"].source, SOLUTIONS / "l1_softmax.py", tmp_path)
    assert len(cases) == 20 and not left_out
    assert bench.oracle_verdict(cases, SOLUTIONS / "l1_softmax.py", "original") is None
    no_max = bench.oracle_verdict(cases, _mutant(bench, tasks, "l1_softmax", "drop_max_subtraction", tmp_path), "m")
    assert no_max and ("large" in no_max or "mixed" in no_max), no_max  # only large values show it
    unmasked = bench.oracle_verdict(cases, _mutant(bench, tasks, "l1_softmax", "drop_mask", tmp_path), "u")
    assert unmasked and "outside its tensors" in unmasked


@pytest.mark.slow
def test_oracle_sees_a_dropped_last_block_at_edge_sizes(bench, tasks, tmp_path):
    cases, _ = bench.oracle_cases(tasks["l1_sum_dim"].source, SOLUTIONS / "l1_sum_dim.py", tmp_path)
    short = bench.oracle_verdict([c for c in cases if c.kind == "randn"],
                                 _mutant(bench, tasks, "l1_sum_dim", "loop_bound", tmp_path), "s")
    assert short and short.startswith("2^j+1/"), short  # the task's own shape (256 = 8 x 32) hides it


def test_summary_counts_rejections_of_wrong_mutants(bench):
    rows = [{"solution": "a", "kind": "k1", "line": 1, "wrong": "x", "accepted": False, "flags": []},
            {"solution": "a", "kind": "k1", "line": 2, "wrong": "y", "accepted": True, "flags": []},
            {"solution": "a", "kind": "k2", "line": 3, "wrong": None, "accepted": True, "flags": []}]
    summary = bench.summarize(rows, [{"accepted": True}])
    assert (summary["wrong"], summary["wrong_rejected"], summary["rejected_share"]) == (2, 1, 0.5)
    assert summary["kinds"]["k1"] == {"mutants": 2, "wrong": 2, "rejected": 1}
    assert summary["accepted_wrong"] == ["a:k1@2 (y)"] and summary["originals_accepted"] == 1
