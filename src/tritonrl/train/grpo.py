"""GRPO through TRL's ``GRPOTrainer``: group-relative advantages over ``num_generations`` samples per prompt.

Mapping from ``RLRunConfig``: ``num_generations``, ``max_completion_length``, ``temperature``, ``top_p``, ``beta`` (KL,
0 = no reference model), ``learning_rate``, ``steps`` -> ``max_steps``, ``per_device_batch_size`` ->
``per_device_train_batch_size`` (completions, a multiple of ``num_generations`` per generation batch),
``use_vllm``/``vllm_mode`` passed through. Run it with ``tritonrl rl --algo grpo`` (see ``tritonrl.train.rl``).
"""

from __future__ import annotations

from tritonrl.config import TrainingConfig
from tritonrl.train.session import StageSession, gradient_checkpointing, trl_args


def online_args(config_cls, config: TrainingConfig, session: StageSession, curriculum_on: bool, **extra):
    """Arguments GRPOConfig and RLOOConfig share."""
    rl = config.rl
    return trl_args(
        config_cls, **session.trainer_kwargs(),
        learning_rate=rl.learning_rate, max_steps=rl.steps,
        per_device_train_batch_size=rl.per_device_batch_size,
        gradient_accumulation_steps=rl.gradient_accumulation_steps,
        num_generations=rl.num_generations, max_completion_length=rl.max_completion_length,
        max_prompt_length=rl.max_prompt_length, temperature=rl.temperature, top_p=rl.top_p, beta=rl.beta,
        use_vllm=rl.use_vllm, vllm_mode=rl.vllm_mode, vllm_server_base_url=rl.vllm_server_base_url,
        bf16=rl.bf16, use_cpu=rl.use_cpu,
        **gradient_checkpointing(config),
        # The curriculum sampler's state is restored from the checkpoint; replaying skipped batches would
        # advance it twice.
        ignore_data_skip=curriculum_on,
        **extra,
    )


def trainer_class():
    from trl import GRPOTrainer

    return GRPOTrainer


def trainer_args(config: TrainingConfig, session: StageSession, curriculum_on: bool):
    from trl import GRPOConfig

    return online_args(GRPOConfig, config, session, curriculum_on)
