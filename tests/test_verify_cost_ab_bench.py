"""benchmarks/verify_cost_ab.py: its report's arithmetic and its refusal of a tree that is not this project (fast); a
real interleaved round of this checkout against itself (``slow``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "verify_cost_ab.py"


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/verify_cost_ab.py")


def _run(batch_s, verdicts, expected, warm=(True,)):
    return {"batch_s": batch_s, "candidates": 4, "verdicts": verdicts, "expected": expected,
            "warm_correct": list(warm), "elapsed_s": [0.1, 0.2, 0.3, 0.4]}


def test_summary_is_the_median_per_candidate_and_says_whether_verdicts_held(bench):
    runs = [_run(4.0, [True, False], [True, False]), _run(2.0, [True, False], [True, False]),
            _run(8.0, [True, False], [True, False])]
    summary = bench.summarise(runs)
    assert summary["per_candidate_s"] == 1.0 and summary["rounds_per_candidate_s"] == [1.0, 0.5, 2.0]
    assert summary["verdicts_as_expected"] and summary["references_accepted"]
    wrong = bench.summarise([_run(4.0, [True, True], [True, False], warm=(True, False))])
    assert not wrong["verdicts_as_expected"] and not wrong["references_accepted"]


def test_a_base_that_is_not_a_checkout_is_refused_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--base", str(tmp_path)], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert proc.returncode == 2 and "has no src/tritonrl" in proc.stderr


@pytest.mark.slow
def test_one_round_of_this_checkout_against_itself(tmp_path):
    out = tmp_path / "ab.json"
    subprocess.run([sys.executable, str(SCRIPT), "--base", str(ROOT), "--rounds", "1", "--per-task", "4",
                    "--tasks", "l1_relu", "--workers", "1", "--out", str(out)], check=True, cwd=ROOT,
                   capture_output=True, text=True, timeout=900)
    report = json.loads(out.read_text())
    for side in ("base", "head"):
        assert report[side]["verdicts_as_expected"] and report[side]["references_accepted"]
        assert report[side]["per_candidate_s"] > 0
    assert report["base"]["commit"] == report["head"]["commit"]
