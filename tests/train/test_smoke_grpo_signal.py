"""The smoke recipe's GRPO learns something: some step has reward variance within a group, and the weights move.

``configs/smoke.yaml`` SFTs a tiny model until it has memorised its two tasks' kernels, then runs GRPO on the
verifier's reward. GRPO's advantage is a completion's reward minus its group's mean: a group whose completions all
pass (or all fail) contributes nothing. The recipe once sampled at temperature 0.3 in groups of 2, so every group
was all-right or all-wrong: reward std 0 and grad norm 0 at every step, and the RL model was exactly the SFT model
(``rl.temperature=0.3 rl.num_generations=2 rl.per_device_batch_size=2`` fails both checks below). This runs the
recipe's SFT and GRPO stages for real, through ``tritonrl pipeline``'s own entry point, and reads what the trainer
logged: ``<run_dir>/grpo/metrics.json``'s ``log_history`` (``trainer.state.log_history``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tritonrl import pipeline
from tritonrl.common.llm import load_model
from tritonrl.common.manifest import RunManifest
from tritonrl.config import PipelineConfig, load_config

SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"


def run_smoke_training(tmp_path: Path, *overrides: str) -> PipelineConfig:
    """The smoke recipe's data, SFT and GRPO stages (no evaluation) in ``tmp_path``; the tiny model built there."""
    config = load_config(str(SMOKE), [f"run.run_dir={tmp_path / 'run'}",
                                      f"model.name_or_path=tiny:{tmp_path / 'tiny-model'}", *overrides],
                         schema=PipelineConfig)
    config.pipeline.stages = ["data", "sft", "rl"]
    threads = torch.get_num_threads()
    try:
        pipeline.run_pipeline(config, log=lambda _: None)
    finally:
        torch.set_num_threads(threads)  # the recipe's run.torch_threads: 1 stays in this test
    return config


def grpo_steps(run_dir: str | Path) -> list[dict]:
    """The GRPO stage's per-step log entries (the ones with a reward), as the trainer logged them."""
    metrics = json.loads(Path(RunManifest(run_dir).output("grpo", "metrics")).read_text())
    return [entry for entry in metrics["log_history"] if "reward" in entry]


def changed_parameters(config: PipelineConfig) -> list[str]:
    """Names of the parameters where the GRPO model differs from the SFT model it started from (both loaded as
    the next stage would: a LoRA adapter merged into its base)."""
    manifest = RunManifest(config.run.run_dir)
    assert manifest.output("grpo", "init_model") == manifest.output("sft", "model")
    sft = dict(load_model(config.model, manifest.output("sft", "model"))[0].named_parameters())
    rl = dict(load_model(config.model, manifest.output("grpo", "model"))[0].named_parameters())
    assert sft.keys() == rl.keys()
    return [name for name in sft if not torch.equal(sft[name], rl[name])]


@pytest.mark.slow
def test_smoke_grpo_has_reward_variance_and_moves_the_weights(tmp_path):
    config = run_smoke_training(tmp_path)
    steps = grpo_steps(config.run.run_dir)
    assert len(steps) == config.rl.steps
    summary = [(s["step"], s["reward"], s["reward_std"], s["frac_reward_zero_std"]) for s in steps]
    # TRL's reward_std is the whole batch's; a batch of one group (smoke: 4 completions of one prompt) has std > 0
    # exactly when that group is mixed. frac_reward_zero_std < 1: some group had a nonzero advantage.
    mixed = [s for s in steps if s["reward_std"] > 0 and s["frac_reward_zero_std"] < 1]
    assert mixed, f"no GRPO step had reward variance within a group (step, reward, std, zero-std share): {summary}"
    assert any(s["signal/frac_zero_std_groups"] < 1 for s in steps)  # the verifier's own rewards agree
    assert any(s["grad_norm"] > 0 for s in mixed)
    health = json.loads((Path(config.run.run_dir) / "grpo" / "signal_health.json").read_text())
    assert not health["no_signal"] and health["steps_with_signal"] >= 1
    assert changed_parameters(config), "the GRPO model's weights are exactly the SFT model's"
