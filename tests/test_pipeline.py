"""The pipeline's bookkeeping: stages in the manifest, skipping finished ones, resuming an interrupted one.

Training and evaluation are fakes here (they have their own tests); the real smoke run is
``tritonrl pipeline --config configs/smoke.yaml`` (marked slow below).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.fake_verifier import FakeVerifier
from tritonrl import pipeline
from tritonrl.common.manifest import RunManifest
from tritonrl.common.stages import StageResult
from tritonrl.config import PipelineConfig, load_config
from tritonrl.errors import ConfigError
from tritonrl.evaluation import evaluate
from tritonrl.evaluation.report import write_report
from tritonrl.verify.shared.verdict import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[1]


class FakeTraining:
    """Stands in for run_sft / run_rl: writes the manifest entry a real stage writes."""

    def __init__(self, interrupt_first: set[str] = frozenset()):
        self.calls: list[tuple[str, bool]] = []
        self.interrupt_first = set(interrupt_first)

    def __call__(self, stage):
        def run(config):
            self.calls.append((stage, config.run.resume))
            manifest = RunManifest(config.run.run_dir)
            manifest.start(stage)
            if stage in self.interrupt_first:
                self.interrupt_first.discard(stage)
                manifest.finish(stage, "interrupted")
                return StageResult(stage, "interrupted", config.run.run_dir, 1)
            model = Path(config.run.run_dir) / stage / "final"
            model.mkdir(parents=True, exist_ok=True)
            manifest.record(stage, model=model, tokenizer=model, base_model="fake/base")
            manifest.finish(stage, "done")
            return StageResult(stage, "done", config.run.run_dir, 2)
        return run


@pytest.fixture
def fakes(monkeypatch):
    training = FakeTraining()
    evaluated = []

    def fake_evaluate(spec, tasks, k, gen, verify, out, meta=None, resume=False):
        evaluated.append(spec)
        ok = VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
        rows = [{"task": t.name, "level": t.level, "sample": 0, "completion": "x", "code": None,
                 "result": ok.to_dict()} for t in tasks]
        return write_report(rows, out, meta)

    monkeypatch.setattr("tritonrl.train.sft.run_sft", training("sft"))
    monkeypatch.setattr("tritonrl.train.rl.run_rl", training("grpo"))
    monkeypatch.setattr(evaluate, "evaluate", fake_evaluate)
    import torch

    threads = torch.get_num_threads()
    yield training, evaluated
    torch.set_num_threads(threads)  # the smoke config's run.torch_threads: 1 stays in this test


def smoke_config(run_dir) -> PipelineConfig:
    return load_config(str(ROOT / "configs" / "smoke.yaml"),
                       [f"run.run_dir={run_dir}", "model.name_or_path=fake/base"], schema=PipelineConfig)


def test_pipeline_records_every_stage_and_skips_them_on_rerun(tmp_path, fakes):
    training, evaluated = fakes
    config = smoke_config(tmp_path / "run")
    report = pipeline.run_pipeline(config, log=lambda _: None)
    assert report == tmp_path / "run" / "report" / "comparison.md" and report.is_file()
    stages = RunManifest(tmp_path / "run").load()["stages"]
    assert {name: s["status"] for name, s in stages.items()} == {
        n: "done" for n in ("data", "sft", "grpo", "eval_base", "eval_sft", "eval_rl", "report")}
    assert evaluated == ["fake/base", f"{tmp_path / 'run'}:sft", f"{tmp_path / 'run'}:grpo"]
    assert json.loads(Path(stages["data"]["outputs"]["tasks"]).read_text())["eval"]
    comparison = json.loads((tmp_path / "run" / "report" / "comparison.json").read_text())
    assert list(comparison["runs"]) == ["base", "sft", "rl"]

    log = []
    pipeline.run_pipeline(config, log=log.append)
    assert training.calls == [("sft", False), ("grpo", False)] and len(evaluated) == 3
    assert sum("skipped" in line for line in log) == 6 and "report: " in log[-1]


def test_pipeline_sets_torch_threads_from_the_config(tmp_path, fakes):
    """smoke.yaml's run.torch_threads: 1 (a tiny model on a shared CPU: see README, "Times")."""
    import torch

    config = smoke_config(tmp_path / "run")
    config.pipeline.stages = ["data"]
    torch.set_num_threads(2)
    pipeline.run_pipeline(config, log=lambda _: None)
    assert config.run.torch_threads == 1 and torch.get_num_threads() == 1


def test_an_interrupted_stage_is_resumed_on_rerun(tmp_path, fakes):
    training, _ = fakes
    training.interrupt_first = {"grpo"}
    config = smoke_config(tmp_path / "run")
    with pytest.raises(pipeline.StageNotFinished, match="grpo ended interrupted"):
        pipeline.run_pipeline(config, log=lambda _: None)
    assert RunManifest(tmp_path / "run").stage("eval_base") is None
    pipeline.run_pipeline(config, log=lambda _: None)
    assert training.calls == [("sft", False), ("grpo", False), ("grpo", True)]


def test_the_cli_exits_143_when_a_stage_was_stopped(monkeypatch, capsys):
    """A stage stopped by a signal or a pre-emption: the CLI says how to resume and exits 143, as tritonrl rl does
    (not 2, which means a bad config an orchestrator should not retry)."""
    from tritonrl.cli import main

    def stopped(config):
        raise pipeline.StageNotFinished("stage grpo ended interrupted", "SIGTERM")

    monkeypatch.setattr(pipeline, "run_pipeline", stopped)
    assert main(["pipeline", "--config", "configs/smoke.yaml"]) == 143
    err = capsys.readouterr().err
    assert "stage grpo ended interrupted; run the same command again to resume" in err


def test_unknown_stage_is_a_config_error(tmp_path):
    config = smoke_config(tmp_path)
    config.pipeline.stages = ["data", "distill"]
    with pytest.raises(ConfigError, match="distill"):
        pipeline.run_pipeline(config)


@pytest.mark.slow
def test_smoke_pipeline_end_to_end(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    cmd = [sys.executable, "-m", "tritonrl", "pipeline", "--config", "configs/smoke.yaml",
           "--run-dir", str(tmp_path / "run")]
    done = subprocess.run(cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(tmp_path / "run" / "report" / "comparison.md")
    assert (tmp_path / "run" / "report" / "comparison.png").is_file()


# ---------------------------------------------------------------- train / eval separation (issue 16)
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def _local_sources(sources: list[str]) -> list[str]:
    """Sources loadable offline (hub datasets such as KernelBook are compared at pipeline run time)."""
    return [s for s in sources if s == "bundled" or Path(s).exists()]


def _generated_splits(config, tmp_path: Path) -> dict[str, str]:
    """The learning demo's task directories (made by ``benchmarks/studies/learning_demo.py`` at run time), generated here
    for real (a few tasks, references accepted without running them), so its split is checked like the others."""
    from tritonrl.taskgen import generate_tasks

    accept_all = FakeVerifier(lambda text: VerifyResult(stage=Stage.DONE, valid=True, compiled=True,
                                                        tiny_correct=True, correct=True))
    made = {}
    for path in [config.data.source, *config.data.sft_sources, config.eval.tasks]:
        name = Path(str(path)).name
        if not Path(str(path)).exists() and name in ("train", "sft", "heldout"):
            out = tmp_path / name
            if not out.exists():
                generate_tasks(n=3, seed=config.run.seed, split="heldout" if name == "heldout" else "train",
                               out=out, verifier=accept_all)
            made[str(path)] = str(out)
    return made


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_holds_its_eval_tasks_out_or_says_in_distribution(path, tmp_path):
    import dataclasses

    config = load_config(str(path), schema=PipelineConfig)
    assert config.eval.tasks, "every recipe names its evaluation tasks"
    made = _generated_splits(config, tmp_path)
    source = made.get(config.data.source, config.data.source)
    sft = [made.get(s, s) for s in config.data.sft_sources]
    data = dataclasses.replace(config.data, sft_sources=_local_sources(sft) or ["bundled"],
                               source=source if _local_sources([source]) else "bundled")
    config = dataclasses.replace(config, data=data,
                                 eval=dataclasses.replace(config.eval, tasks=made.get(config.eval.tasks,
                                                                                      config.eval.tasks)))
    split = pipeline.task_split(config)
    assert split.train and split.eval
    assert not split.overlap or config.pipeline.in_distribution, (path.name, split.overlap)
    if path.name == "grpo_7b.yaml":
        assert not split.overlap and sorted(config.data.exclude_tasks) == split.eval


def test_eval_tasks_that_were_trained_on_are_refused_before_any_stage(tmp_path, fakes):
    training, evaluated = fakes
    config = smoke_config(tmp_path / "run")
    config.pipeline.in_distribution = False
    with pytest.raises(ConfigError, match="l1_relu.*not be held-out.*data.exclude_tasks"):
        pipeline.run_pipeline(config, log=lambda _: None)
    assert training.calls == [] and evaluated == [] and not (tmp_path / "run" / "manifest.json").exists()


def test_an_in_distribution_report_says_so(tmp_path, fakes):
    config = smoke_config(tmp_path / "run")  # smoke: trains on its eval tasks, pipeline.in_distribution: true
    log = []
    report = pipeline.run_pipeline(config, log=log.append)
    assert report.read_text().startswith("> **IN-DISTRIBUTION (2/2 eval tasks were trained on)**")
    assert any("WARNING" in line and "not held-out" in line for line in log)
    meta = json.loads((tmp_path / "run" / "eval" / "sft" / "report.json").read_text())["meta"]
    assert meta["split"].startswith("IN-DISTRIBUTION")


def test_excluded_tasks_are_never_trained_on(tmp_path):
    from tritonrl.train.data import load_training_tasks

    config = load_config(None, ["data.levels=[1]", "data.exclude_tasks=[l1_relu, l1_gelu]"])
    names = {t.name for t in load_training_tasks(config.data)}
    assert names and not names & {"l1_relu", "l1_gelu"}
