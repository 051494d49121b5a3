"""The training stages, found through one registry: name, manifest stage, entry point; and what every stage shares.

    from tritonrl.common import stages
    stages.algorithm("best-of-n").stage          # "best_of_n": the run manifest's name for it
    stages.algorithm("grpo").run(config)          # -> StageResult (tritonrl.train.grpo.run_grpo)

``rl.algo`` names an algorithm (``grpo``, ``rloo``, ``best-of-n``); its run-directory stage is the name with
``-`` as ``_`` (``stage_name``: the only place that rule lives). Each entry point is imported by name only when it
runs (as torchtune's recipe registry does), so algorithm modules never import each other and this module imports
no training stack: the evaluator and the pipeline read ``RL_STAGES`` from here cheaply.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tritonrl.common.manifest import RunManifest
    from tritonrl.config import TrainingConfig


@dataclass
class StageResult:
    """What a stage did; ``status`` is done, interrupted or failed (see the manifest for paths)."""

    stage: str
    status: str
    run_dir: str
    global_step: int
    final_loss: float | None = None
    final_reward: float | None = None
    model_path: str | None = None
    reason: str | None = None  # why an interrupted stage stopped (SIGINT, SIGTERM, preempted): its exit status


def stage_name(algo: str) -> str:
    """The run manifest's stage for ``rl.algo`` (``best-of-n`` -> ``best_of_n``)."""
    return algo.replace("-", "_")


@dataclass(frozen=True)
class Algorithm:
    """An RL algorithm: its ``rl.algo`` name and its entry point ``module:function(config, verifier=None)``."""

    name: str
    entry: str

    @property
    def stage(self) -> str:
        return stage_name(self.name)

    def run(self, config: TrainingConfig, verifier: Any = None) -> StageResult:
        module, _, function = self.entry.partition(":")
        run: Callable[..., StageResult] = getattr(importlib.import_module(module), function)
        return run(config, verifier=verifier)


ALGORITHMS = {a.name: a for a in (
    Algorithm("grpo", "tritonrl.train.grpo:run_grpo"),
    Algorithm("rloo", "tritonrl.train.rloo:run_rloo"),
    Algorithm("best-of-n", "tritonrl.train.best_of_n:run_best_of_n"),
)}
ALGOS = tuple(ALGORITHMS)
SFT_STAGE = "sft"
RL_STAGES = tuple(a.stage for a in ALGORITHMS.values())  # what ``RUN_DIR:rl`` may name


def algorithm(name: str) -> Algorithm:
    from tritonrl.errors import ConfigError

    if name not in ALGORITHMS:
        raise ConfigError(f"unknown rl.algo {name!r}; choose one of {', '.join(ALGOS)}")
    return ALGORITHMS[name]


# ---------------------------------------------------------------- what every stage shares
def init_model_path(config: TrainingConfig, manifest: RunManifest) -> str:
    """The model an RL stage starts from: a previous stage's recorded output (``rl.init_from``), or the
    configured model."""
    if config.rl.init_from:
        return manifest.output(config.rl.init_from, "model")
    from tritonrl.common.llm import resolve_model_path

    return resolve_model_path(config.model.name_or_path)


def last_logged(log_history: list[dict], key: str) -> float | None:
    """The last value of ``key`` in a trainer's ``state.log_history`` (None if never logged)."""
    values = [entry[key] for entry in log_history if key in entry]
    return float(values[-1]) if values else None


def warmup(config_cls, ratio: float) -> dict[str, float]:
    """transformers 5 folded ``warmup_ratio`` into ``warmup_steps`` (a float < 1 is a ratio)."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(config_cls)}
    return {"warmup_ratio": ratio} if "warmup_ratio" in names else {"warmup_steps": ratio}
