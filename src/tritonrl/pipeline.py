"""The one-command pipeline: prepare data -> SFT -> RL -> evaluate base, SFT and RL -> comparison report.

    tritonrl pipeline --config configs/smoke.yaml [--run-dir runs/x]   # tiny model, bundled tasks, CPU

Every stage is recorded in ``<run_dir>/manifest.json`` (``tritonrl.train.manifest``): ``data``, ``sft``, the RL
algorithm's stage (``grpo``, ``rloo`` or ``best_of_n``), ``eval_base`` / ``eval_sft`` / ``eval_rl`` and ``report``.
Re-running the same command skips stages marked done and resumes an interrupted training stage from its newest
complete checkpoint; an interrupted evaluation is run again from the start (it has no checkpoints). The
comparison report is rebuilt every time (it only reads the eval reports). Each model is named by the path its
stage recorded in the manifest, never by a guessed path.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from tritonrl.config import PipelineConfig
from tritonrl.errors import ConfigError, UserError

STAGES = ("data", "sft", "rl", "eval", "report")
EVAL_MODELS = ("base", "sft", "rl")


class StageNotFinished(UserError):
    """A training stage ended interrupted or failed; re-running the pipeline resumes it."""


def run_pipeline(config: PipelineConfig, log: Callable[[str], None] = print) -> Path:
    """Run (or resume) every configured stage; returns the path of the comparison report."""
    from tritonrl.train.manifest import RunManifest

    _check(config)
    run_dir = Path(config.run.run_dir)
    manifest = RunManifest(run_dir)
    stages = config.pipeline.stages
    if "data" in stages:
        _once(manifest, "data", log, lambda: prepare_data(config, run_dir))
    if "sft" in stages:
        _train(manifest, "sft", config, log)
    rl_stage = config.rl.algo.replace("-", "_")
    if "rl" in stages:
        _train(manifest, rl_stage, config, log)
    if "eval" in stages:
        for name in config.pipeline.eval_models:
            spec = {"base": config.model.name_or_path, "sft": f"{run_dir}:sft", "rl": f"{run_dir}:{rl_stage}"}[name]
            _once(manifest, f"eval_{name}", log, lambda spec=spec, name=name: evaluate_model(config, spec, name))
    report = run_dir / "report" / "comparison.md"
    if "report" in stages:
        _always(manifest, "report", log, lambda: build_comparison(config, run_dir))
    log(f"tritonrl: pipeline done; report: {report}")
    return report


def _check(config: PipelineConfig) -> None:
    unknown = [s for s in config.pipeline.stages if s not in STAGES]
    unknown += [m for m in config.pipeline.eval_models if m not in EVAL_MODELS]
    if unknown:
        raise ConfigError(f"unknown pipeline stage or eval model: {', '.join(unknown)} "
                          f"(stages: {', '.join(STAGES)}; eval_models: {', '.join(EVAL_MODELS)})")


# ---------------------------------------------------------------- stage bookkeeping
def _once(manifest, name: str, log, work: Callable[[], dict[str, str]]) -> None:
    """Run ``work`` unless the manifest says ``name`` is done; record its outputs and status."""
    entry = manifest.stage(name)
    if entry and entry.get("status") == "done":
        log(f"tritonrl: stage {name}: done already, skipped")
        return
    _always(manifest, name, log, work)


def _always(manifest, name: str, log, work: Callable[[], dict[str, str]]) -> None:
    log(f"tritonrl: stage {name}: running")
    manifest.start(name)
    try:
        outputs = work()
    except KeyboardInterrupt:
        manifest.finish(name, "interrupted")
        raise
    except BaseException as exc:
        manifest.finish(name, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    manifest.record(name, **outputs)
    manifest.finish(name, "done")


def _train(manifest, stage: str, config: PipelineConfig, log) -> None:
    """Training stages keep their own manifest entry (StageSession); an unfinished one is resumed."""
    entry = manifest.stage(stage)
    if entry and entry.get("status") == "done":
        log(f"tritonrl: stage {stage}: done already, skipped")
        return
    run = dataclasses.replace(config.run, resume=entry is not None)
    log(f"tritonrl: stage {stage}: {'resuming' if entry else 'running'}")
    if stage == "sft":
        from tritonrl.train.sft import run_sft

        result = run_sft(dataclasses.replace(config, run=run))
    else:
        from tritonrl.train.rl import run_rl

        init_from = "sft" if "sft" in config.pipeline.stages else config.rl.init_from
        rl = dataclasses.replace(config.rl, init_from=init_from)
        result = run_rl(dataclasses.replace(config, run=run, rl=rl))
    if result.status != "done":
        raise StageNotFinished(f"stage {stage} ended {result.status}; run the same command again to resume")


# ---------------------------------------------------------------- the stages' work
def prepare_data(config: PipelineConfig, run_dir: Path) -> dict[str, str]:
    """Check the training and eval tasks load, build the tiny model if asked for, and list the tasks."""
    from tritonrl.evaluate import select_tasks
    from tritonrl.train.data import load_training_tasks
    from tritonrl.train.models import resolve_model_path

    train_tasks = load_training_tasks(config.data, config.data.sft_sources)
    eval_tasks = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    model = resolve_model_path(config.model.name_or_path)
    out = run_dir / "data" / "tasks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    listing = {"train": [[t.name, t.level] for t in train_tasks], "eval": [[t.name, t.level] for t in eval_tasks]}
    out.write_text(json.dumps(listing, indent=1) + "\n")
    return {"tasks": str(out), "base_model": model}


def evaluate_model(config: PipelineConfig, spec: str, name: str) -> dict[str, str]:
    from tritonrl.evaluate import evaluate, select_tasks

    out = Path(config.run.run_dir) / "eval" / name
    tasks = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    evaluate(spec, tasks, config.eval.k, config.eval, config.verify, out, meta={"stage": name})
    return {"report": str(out / "report.json"), "results": str(out / "results.jsonl")}


def build_comparison(config: PipelineConfig, run_dir: Path) -> dict[str, str]:
    from tritonrl.report import compare_runs

    evals = [run_dir / "eval" / m for m in config.pipeline.eval_models if (run_dir / "eval" / m / "report.json").exists()]
    if not evals:
        raise UserError(f"no evaluation reports under {run_dir / 'eval'} to compare")
    compare_runs(evals, run_dir / "report")
    return {"comparison": str(run_dir / "report" / "comparison.md")}
