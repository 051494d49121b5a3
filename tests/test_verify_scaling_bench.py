"""benchmarks/verify_scaling.py: the mixed batch, the JSON written after every configuration with the keys the
issue asks for, the time budget; the real CPU path (Triton's interpreter, 1 and 2 workers) is ``slow``."""

from __future__ import annotations

import json

import pytest

from tests.helpers.scripts import load_script
from tritonrl.verify.shared.verdict import Stage, VerifyResult

KEYS = ("all_verdicts_as_expected", "speedup_4_over_1", "scaling", "rl_step", "machine", "complete")


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/verify_scaling.py")


class ExpectedVerdicts:
    """Judges each candidate as its kind says it should be (the kind is on the code's first line)."""

    def __init__(self, bench, wrong_kind=None):
        self.bench, self.wrong_kind, self.closed = bench, wrong_kind, False

    def start(self, wait=False):
        pass

    def verify_many(self, items):
        out = []
        for item in items:
            kind = item.code.split("\n", 1)[0].split()[-2] if item.code.startswith("# candidate") else "right"
            ok = self.bench.EXPECTED_CORRECT[kind] != (kind == self.wrong_kind)
            out.append(VerifyResult(stage=Stage.DONE, valid=True, compiled=True, correct=ok,
                                    timing={"stage_s": {"correctness": 0.01, "nested": {"x": 1}}}))
        return out

    def close(self):
        self.closed = True


def test_mixed_batch_holds_every_kind_and_the_rl_step_its_size(bench):
    tasks = bench.select_tasks("l1_relu,l2_gemm_bias_relu")
    batch = bench.mixed_batch(tasks, 4)
    kinds = {kind for _, kind, _ in batch}
    assert kinds == set(bench.EXPECTED_CORRECT)
    assert len({code for _, _, code in batch}) == len(batch)  # every candidate a distinct file
    assert len(bench.mixed_batch(tasks, 0, limit=512)) == 512
    assert len(bench.select_tasks("8")) == 8


def test_json_after_every_configuration_with_the_issue_keys(bench, monkeypatch, tmp_path):
    made = []

    def fake(args, config, n, device):
        made.append(n)
        json.loads((tmp_path / "vs.json").read_text())  # written before each configuration is measured
        return ExpectedVerdicts(bench)

    monkeypatch.setattr(bench, "make_verifier", fake)
    out = tmp_path / "vs.json"
    assert bench.main(["--device", "cpu", "--gpus", "1,2,4", "--tasks", "l1_relu", "--per-task", "1",
                       "--rl-step", "16", "--rl-gpus", "4,1", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert all(key in report for key in KEYS) and report["complete"]
    assert report["all_verdicts_as_expected"] is True
    assert isinstance(report["speedup_4_over_1"], float)
    assert [r["gpus"] for r in report["scaling"]] == [1, 2, 4] and made == [1, 2, 4, 4, 1]
    assert [r["candidates"] for r in report["rl_step"]] == [16, 16]


def test_an_unexpected_verdict_fails_the_run(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "make_verifier", lambda *a: ExpectedVerdicts(bench, wrong_kind="hang"))
    out = tmp_path / "vs.json"
    assert bench.main(["--device", "cpu", "--gpus", "1", "--tasks", "l1_relu", "--rl-step", "0",
                       "--out", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["all_verdicts_as_expected"] is False and report["scaling"][0]["unexpected"]


def test_a_configuration_past_the_budget_is_skipped_not_started(bench, monkeypatch, tmp_path):
    monkeypatch.setattr(bench, "make_verifier", lambda *a: ExpectedVerdicts(bench))
    monkeypatch.setattr(bench, "predicted_s", lambda rows, n, c: 1e9 if rows else None)
    out = tmp_path / "vs.json"
    bench.main(["--device", "cpu", "--gpus", "1,2", "--tasks", "l1_relu", "--rl-step", "8", "--out", str(out)])
    report = json.loads(out.read_text())
    assert "seconds" in report["scaling"][0] and "skipped" in report["scaling"][1]
    assert "skipped" in report["rl_step"][0] and report["complete"]


@pytest.mark.slow
def test_the_real_cpu_path_judges_the_mix_as_expected(bench, tmp_path):
    out = tmp_path / "vs.json"
    assert bench.main(["--device", "cpu", "--gpus", "1,2", "--tasks", "l1_relu", "--per-task", "1",
                       "--rl-step", "8", "--timeout-s", "8", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["all_verdicts_as_expected"] is True and report["speedups_over_1"]["2"] > 0
