"""REINFORCE with a baseline, through TRL's ``RLOOTrainer`` (REINFORCE Leave-One-Out).

In this TRL release ``RLOOTrainer`` takes reward functions exactly like ``GRPOTrainer`` (same
``reward_funcs``, dataset columns passed to them, ``num_generations`` samples per prompt). The mapping to
REINFORCE-with-baseline: each completion's advantage is its reward minus the mean reward of the *other*
``num_generations - 1`` completions of the same prompt (the leave-one-out baseline), so ``num_generations``
must be at least 2. Settings come from ``RLRunConfig`` as for GRPO (``tritonrl.train.rl.online_args``);
``rl.scale_rewards`` maps to RLOO's ``normalize_advantages`` (``batch``: on, ``none``: off; ``group`` has no RLOO
form and is refused at load), and ``rl.loss_type`` (a GRPO option) is not used.
"""

from __future__ import annotations

from tritonrl.common.stages import StageResult
from tritonrl.config import TrainingConfig
from tritonrl.errors import ConfigError
from tritonrl.train.rl import online_args, run_online
from tritonrl.train.stage_session import StageSession


def trainer_class():
    from trl import RLOOTrainer

    return RLOOTrainer


def trainer_args(config: TrainingConfig, session: StageSession, curriculum_on: bool):
    from trl import RLOOConfig

    if config.rl.num_generations < 2:
        raise ConfigError("rloo needs rl.num_generations >= 2 (the baseline is the other samples' mean)")
    return online_args(RLOOConfig, config, session, curriculum_on,
                       normalize_advantages=config.rl.scale_rewards == "batch")


def run_rloo(config: TrainingConfig, verifier=None) -> StageResult:
    """``rl.algo: rloo`` (registered in ``tritonrl.common.stages``); ``verifier`` replaces the real one (tests)."""
    return run_online(config, trainer_class(), trainer_args, verifier)
