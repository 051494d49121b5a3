"""The golden examples end to end: real extraction, real verifier, real report, compared exactly.

``examples/golden/completions.jsonl`` holds hand-written completions (correct, off-by-a-bit math, PyTorch
fallback, try/except fallback, a hang, prose only, a syntax error) and ``expected_metrics.json`` the rates and
counts computed by hand. A harness bug (extraction, paths, verifier) moves these numbers. ~40 s on 2 CPU cores.
"""

import json
import sys
from pathlib import Path

import pytest

from tritonrl.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "examples" / "golden"


def test_completions_jsonl_is_built_from_the_markdown_files():
    sys.path.insert(0, str(GOLDEN))
    try:
        import build
    finally:
        sys.path.remove(str(GOLDEN))
    assert (GOLDEN / "completions.jsonl").read_text() == build.build()


def test_golden_completions_score_exactly_as_hand_computed(tmp_path):
    expected = json.loads((GOLDEN / "expected_metrics.json").read_text())
    out = tmp_path / "golden"
    argv = ["eval", "--completions", str(GOLDEN / "completions.jsonl"), "--device", "cpu", "--timeout", "20",
            "--out", str(out)]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    for key in ("n_samples", "n_tasks", "format_rate", "valid_rate", "compiled_rate", "tiny_rate", "correct_rate"):
        assert report[key] == pytest.approx(expected[key]), key
    assert report["pass_at_k"] == pytest.approx(expected["pass_at_k"])
    assert report["fast_p"] == pytest.approx(expected["fast_p"])
    assert report["failures"] == expected["failures"]
    assert report["warnings"] == []

    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    kinds = [json.loads(line)["kind"] for line in (GOLDEN / "completions.jsonl").read_text().splitlines()]
    for row, kind, want in zip(rows, kinds, expected["samples"], strict=True):
        got = row["result"]
        assert (row["task"], kind) == (want["task"], want["kind"])
        assert (got["stage"], got["correct"]) == (want["stage"], want["correct"]), (kind, got["error"])
        assert want["flag"] is None or want["flag"] in got["flags"], (kind, got["flags"])
    assert (out / "report.md").read_text().startswith("# Evaluation report")
