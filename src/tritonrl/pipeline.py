"""The one-command pipeline: prepare data -> SFT -> RL -> evaluate base, SFT and RL -> comparison report.

    tritonrl pipeline --config configs/smoke.yaml [--run-dir runs/x]   # tiny model, bundled tasks, CPU

Every stage is recorded in ``<run_dir>/manifest.json`` (``tritonrl.common.manifest``): ``data``, ``sft``, the RL
algorithm's stage (``grpo``, ``rloo`` or ``best_of_n``), ``eval_base`` / ``eval_sft`` / ``eval_rl`` and ``report``.
Re-running the same command skips stages marked done and resumes an interrupted training stage from its newest
complete checkpoint, and an unfinished evaluation from what it saved (``tritonrl.evaluation.evaluate``'s ``resume``: its
sampled completions and judged samples are kept). SIGTERM/SIGINT stop a training stage after the current step
and an evaluation after the current generate call or verdict; either way the stage is marked ``interrupted``
and ``StageNotFinished`` is raised (run the same command again). The comparison report is rebuilt every time
(it only reads the eval reports). Each model is named by the path its stage recorded in the manifest, never by a
guessed path.

Held-out or not: before any stage runs, the evaluation tasks (``eval.tasks``) are compared with every training
task (``data.source`` and ``data.sft_sources``, less ``data.exclude_tasks``) by name and by exact source. An
overlap is an error unless ``pipeline.in_distribution: true``; then every report says IN-DISTRIBUTION (the
eval meta, the comparison's first line, ``report/split.json``), so a number on trained tasks is never read as a
held-out one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tritonrl.common.stages import stage_name
from tritonrl.config import PipelineConfig
from tritonrl.errors import ConfigError, Stopped, UserError

STAGES = ("data", "sft", "rl", "eval", "report")
EVAL_MODELS = ("base", "sft", "rl")


RESUME_HINT = "run the same command again to resume"


class StageNotFinished(Stopped):
    """A training stage ended interrupted (a signal, a pre-emption), or an evaluation was stopped by one; re-running
    the pipeline resumes it. The CLI exits 143 (130 for Ctrl-C), as ``tritonrl sft``/``rl``/``eval`` stopped the same
    way do."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message, reason, RESUME_HINT)


def run_pipeline(config: PipelineConfig, log: Callable[[str], None] = print) -> Path:
    """Run (or resume) every configured stage; returns the path of the comparison report."""
    from tritonrl.common.manifest import RunManifest
    from tritonrl.train.stage_session import use_torch_threads

    _check(config)
    use_torch_threads(config.run)  # the training stages and the models' generation in eval
    split = check_split(config, log)
    run_dir = Path(config.run.run_dir)
    manifest = RunManifest(run_dir)
    stages = config.pipeline.stages
    if "data" in stages:
        _once(manifest, "data", log, lambda: prepare_data(config, run_dir))
    if "sft" in stages:
        _train(manifest, "sft", config, log)
    rl_stage = stage_name(config.rl.algo)
    if "rl" in stages:
        _train(manifest, rl_stage, config, log)
    if "eval" in stages:
        for name in config.pipeline.eval_models:
            spec = {"base": config.model.name_or_path, "sft": f"{run_dir}:sft", "rl": f"{run_dir}:{rl_stage}"}[name]
            resume = manifest.stage(f"eval_{name}") is not None  # an earlier attempt's work is kept
            _once(manifest, f"eval_{name}", log,
                  lambda spec=spec, name=name, resume=resume: evaluate_model(config, spec, name, split, resume))
    report = run_dir / "report" / "comparison.md"
    if "report" in stages:
        _always(manifest, "report", log, lambda: build_comparison(config, run_dir, split))
    log(f"tritonrl: pipeline done; report: {report}")
    return report


def _check(config: PipelineConfig) -> None:
    unknown = [s for s in config.pipeline.stages if s not in STAGES]
    unknown += [m for m in config.pipeline.eval_models if m not in EVAL_MODELS]
    if unknown:
        raise ConfigError(f"unknown pipeline stage or eval model: {', '.join(unknown)} "
                          f"(stages: {', '.join(STAGES)}; eval_models: {', '.join(EVAL_MODELS)})")


# ---------------------------------------------------------------- train / eval separation
@dataclass
class TaskSplit:
    """Training and evaluation task names, and the evaluation tasks that were also trained on."""

    train: list[str]
    eval: list[str]
    overlap: list[str]

    @property
    def label(self) -> str:
        if not self.overlap:
            return "held-out"
        return f"IN-DISTRIBUTION ({len(self.overlap)}/{len(self.eval)} eval tasks were trained on)"

    def to_dict(self) -> dict:
        return {"label": self.label, **dataclasses.asdict(self)}


def _digest(task) -> str:
    return hashlib.sha256(task.source.encode()).hexdigest()


def task_split(config: PipelineConfig) -> TaskSplit:
    """Every training task (SFT and RL sources, after the data filters) against the evaluation tasks."""
    from tritonrl.tasks import select_tasks
    from tritonrl.train.data import load_training_tasks

    train = load_training_tasks(config.data, config.data.sft_sources) + load_training_tasks(config.data)
    evaluated = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    names, digests = {t.name for t in train}, {_digest(t) for t in train}
    overlap = sorted({t.name for t in evaluated if t.name in names or _digest(t) in digests})
    return TaskSplit(sorted(names), sorted(t.name for t in evaluated), overlap)


def check_split(config: PipelineConfig, log: Callable[[str], None] = print) -> TaskSplit | None:
    """Refuse to report held-out numbers on trained tasks; with ``pipeline.in_distribution`` say so loudly."""
    trained = [m for m in config.pipeline.eval_models if m in ("sft", "rl")]
    if "eval" not in config.pipeline.stages or not trained:
        return None
    split = task_split(config)
    if split.overlap and not config.pipeline.in_distribution:
        shown = ", ".join(split.overlap[:8]) + (" ..." if len(split.overlap) > 8 else "")
        raise ConfigError(f"eval.tasks overlaps the training tasks ({len(split.overlap)}: {shown}), so the "
                          f"{'/'.join(trained)} numbers would not be held-out; add them to data.exclude_tasks, or "
                          "set pipeline.in_distribution=true for a report labelled IN-DISTRIBUTION")
    if split.overlap:
        log(f"tritonrl: WARNING: evaluation is {split.label}; its numbers are not held-out results")
    return split


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
    except Stopped as exc:  # a signal, obeyed at a safe point: what was done is on disk
        manifest.finish(name, "interrupted", reason=exc.reason, stopped=exc.message)
        raise StageNotFinished(f"stage {name} stopped: {exc.message}", exc.reason) from None
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
        raise StageNotFinished(f"stage {stage} ended {result.status}", result.reason)


# ---------------------------------------------------------------- the stages' work
def prepare_data(config: PipelineConfig, run_dir: Path) -> dict[str, str]:
    """Check the training and eval tasks load, build the tiny model if asked for, and list the tasks."""
    from tritonrl.common.llm import resolve_model_path
    from tritonrl.tasks import select_tasks
    from tritonrl.train.data import load_training_tasks

    train_tasks = load_training_tasks(config.data, config.data.sft_sources)
    eval_tasks = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    model = resolve_model_path(config.model.name_or_path)
    out = run_dir / "data" / "tasks.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    listing = {"train": [[t.name, t.level] for t in train_tasks], "eval": [[t.name, t.level] for t in eval_tasks]}
    out.write_text(json.dumps(listing, indent=1) + "\n")
    return {"tasks": str(out), "base_model": model}


def evaluate_model(config: PipelineConfig, spec: str, name: str, split: TaskSplit | None = None,
                   resume: bool = False) -> dict[str, str]:
    from tritonrl.evaluation.evaluate import evaluate
    from tritonrl.tasks import select_tasks

    out = Path(config.run.run_dir) / "eval" / name
    tasks = select_tasks(config.eval.tasks, config.eval.level, config.eval.max_tasks)
    meta = {"stage": name, **({"split": split.label} if split else {})}
    evaluate(spec, tasks, config.eval.k, config.eval, config.verify, out, meta=meta, resume=resume)
    return {"report": str(out / "report.json"), "results": str(out / "results.jsonl")}


def build_comparison(config: PipelineConfig, run_dir: Path, split: TaskSplit | None = None) -> dict[str, str]:
    from tritonrl.evaluation.report import compare_runs

    evals = [run_dir / "eval" / m for m in config.pipeline.eval_models if (run_dir / "eval" / m / "report.json").exists()]
    if not evals:
        raise UserError(f"no evaluation reports under {run_dir / 'eval'} to compare")
    compare_runs(evals, run_dir / "report")
    outputs = {"comparison": str(run_dir / "report" / "comparison.md")}
    if split is not None:
        (run_dir / "report" / "split.json").write_text(json.dumps(split.to_dict(), indent=1) + "\n")
        outputs["split"] = str(run_dir / "report" / "split.json")
    if split is not None and split.overlap:
        md = run_dir / "report" / "comparison.md"
        banner = (f"> **{split.label}**: {', '.join(split.overlap)} were also training tasks. These numbers show "
                  "how well the model fits what it was trained on; they are NOT held-out results.\n\n")
        md.write_text(banner + md.read_text())
    return outputs
