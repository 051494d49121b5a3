"""The exit status of a job stopped at a safe point: 130 when Ctrl-C (SIGINT) asked, 143 for SIGTERM or a
pre-emption, for every command that stops so (eval, tasks generate, sft, rl, pipeline)."""

import pytest

from tritonrl.common.signals import exit_status
from tritonrl.common.stages import StageResult


@pytest.mark.parametrize("reason,status", [("SIGINT", 130), ("SIGINT (rank 1)", 130), ("SIGTERM", 143),
                                           ("SIGTERM (rank 0)", 143), ("preempted", 143), (None, 143)])
def test_exit_status_follows_the_reason(reason, status):
    assert exit_status(reason) == status


@pytest.mark.parametrize("reason,status", [("SIGINT", 130), ("SIGTERM", 143), ("preempted", 143)])
def test_a_training_stage_stopped_exits_with_its_reason_s_status(reason, status, capsys):
    from tritonrl.cli.train import _summary

    assert _summary(StageResult("sft", "interrupted", "runs/x", 3, reason=reason)) == status
    assert _summary(StageResult("sft", "done", "runs/x", 3)) == 0
    assert "sft interrupted run_dir=runs/x steps=3" in capsys.readouterr().out


def test_the_pipeline_stopped_by_ctrl_c_exits_130(monkeypatch, capsys):
    from tritonrl import pipeline
    from tritonrl.cli import main

    def stopped(config):
        raise pipeline.StageNotFinished("stage sft ended interrupted", "SIGINT")

    monkeypatch.setattr(pipeline, "run_pipeline", stopped)
    assert main(["pipeline", "--config", "configs/smoke.yaml"]) == 130
    assert "stage sft ended interrupted; run the same command again to resume" in capsys.readouterr().err
