"""GRPO through TRL's ``GRPOTrainer``: group-relative advantages over ``num_generations`` samples per prompt.

Mapping from ``RLRunConfig`` (shared with RLOO in ``tritonrl.train.rl.online_args``): ``num_generations``,
``max_completion_length``, ``temperature``, ``top_p``, ``beta`` (KL, 0 = no reference model), ``learning_rate``,
``steps`` -> ``max_steps``, ``per_device_batch_size`` -> ``per_device_train_batch_size`` (completions, a multiple
of ``num_generations`` per generation batch), ``num_iterations``, ``epsilon_high``, ``mask_truncated_completions``,
``use_vllm`` / ``vllm_mode`` / ``vllm_gpu_memory_utilization`` / ``vllm_max_model_length`` /
``vllm_enable_sleep_mode``; GRPO only: ``scale_rewards`` and ``loss_type``. Then ``rl.trl`` (any other GRPOConfig
option, keys checked at load) is applied last, so it can override any of ours. ``max_prompt_length`` is not
passed: current TRL has no such option (an older one that does can take it through ``rl.trl``).
Run it with ``tritonrl rl --algo grpo`` (``run_grpo``, found through ``tritonrl.common.stages``).
"""

from __future__ import annotations

from tritonrl.common.stages import StageResult
from tritonrl.config import TrainingConfig
from tritonrl.train.rl import online_args, run_online
from tritonrl.train.stage_session import StageSession


def trainer_class():
    from trl import GRPOTrainer

    return GRPOTrainer


def trainer_args(config: TrainingConfig, session: StageSession, curriculum_on: bool):
    from trl import GRPOConfig

    return online_args(GRPOConfig, config, session, curriculum_on,
                       scale_rewards=config.rl.scale_rewards, loss_type=config.rl.loss_type)


def run_grpo(config: TrainingConfig, verifier=None) -> StageResult:
    """``rl.algo: grpo`` (registered in ``tritonrl.common.stages``); ``verifier`` replaces the real one (tests)."""
    return run_online(config, trainer_class(), trainer_args, verifier)
