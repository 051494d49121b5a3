"""benchmarks/studies/grpo_direction.py: the figures its report is made of (the GRPO run itself is the driver's, tested in
test_learning_signal.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tritonrl.verify.shared.verdict import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[2]


def grpo_direction():
    spec = importlib.util.spec_from_file_location("grpo_direction", ROOT / "benchmarks" / "studies" / "grpo_direction.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_staged_mean_scores_eval_rows_with_the_training_reward(tmp_path):
    results = [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True),
               VerifyResult(stage=Stage.DONE, valid=True, compiled=True),  # compiled, wrong: 0.3
               VerifyResult(stage=Stage.DONE, valid=False)]                # invalid: 0
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps({"task": "t", "result": r.to_dict()}) + "\n" for r in results))
    assert grpo_direction().staged_mean(path) == pytest.approx((0.7 + 0.3 + 0.0) / 3)


def test_by_thirds_averages_the_training_steps(tmp_path):
    steps = [{"step": i, "correct_rate": i / 10, "reward": 0.3, "true_zero_std_groups": 0.5} for i in range(1, 7)]
    (tmp_path / "signal_health.json").write_text(json.dumps({"steps": steps}))
    thirds = grpo_direction().by_thirds(tmp_path)
    assert thirds["correct_rate"] == [0.15, 0.35, 0.55]
    assert thirds["reward"] == [0.3, 0.3, 0.3] and thirds["zero_variance_groups"] == [0.5, 0.5, 0.5]


def test_help_runs():
    with pytest.raises(SystemExit) as exc:
        grpo_direction().parse_args(["--help"])
    assert exc.value.code == 0
