"""GRPO through TRL's ``GRPOTrainer``: group-relative advantages over ``num_generations`` samples per prompt.

Mapping from ``RLRunConfig`` (shared with RLOO in ``online_args``): ``num_generations``, ``max_completion_length``,
``temperature``, ``top_p``, ``beta`` (KL, 0 = no reference model), ``learning_rate``, ``steps`` -> ``max_steps``,
``per_device_batch_size`` -> ``per_device_train_batch_size`` (completions, a multiple of ``num_generations`` per
generation batch), ``num_iterations``, ``epsilon_high``, ``mask_truncated_completions``, ``use_vllm`` /
``vllm_mode`` / ``vllm_gpu_memory_utilization`` / ``vllm_max_model_length`` / ``vllm_enable_sleep_mode``;
GRPO only: ``scale_rewards`` and ``loss_type``. Then ``rl.trl`` (any other GRPOConfig option, keys checked at
load) is applied last, so it can override any of ours. ``max_prompt_length`` is not passed: current TRL has no
such option (an older one that does can take it through ``rl.trl``).
Run it with ``tritonrl rl --algo grpo`` (see ``tritonrl.train.rl``).
"""

from __future__ import annotations

from tritonrl.config import TrainingConfig
from tritonrl.train.session import StageSession, gradient_checkpointing, trl_args


def online_args(config_cls, config: TrainingConfig, session: StageSession, curriculum_on: bool, **extra):
    """Arguments GRPOConfig and RLOOConfig share, then ``extra``, then the ``rl.trl`` pass-through."""
    rl = config.rl
    kwargs = dict(
        **session.trainer_kwargs(),
        learning_rate=rl.learning_rate, max_steps=rl.steps,
        per_device_train_batch_size=rl.per_device_batch_size,
        gradient_accumulation_steps=rl.gradient_accumulation_steps,
        num_generations=rl.num_generations, max_completion_length=rl.max_completion_length,
        temperature=rl.temperature, top_p=rl.top_p, beta=rl.beta,
        num_iterations=rl.num_iterations, mask_truncated_completions=rl.mask_truncated_completions,
        use_vllm=rl.use_vllm, vllm_mode=rl.vllm_mode, vllm_server_base_url=rl.vllm_server_base_url,
        vllm_gpu_memory_utilization=rl.vllm_gpu_memory_utilization,
        vllm_enable_sleep_mode=rl.vllm_enable_sleep_mode,
        bf16=rl.bf16, use_cpu=rl.use_cpu,
        **gradient_checkpointing(config),
        # The curriculum sampler's state is restored from the checkpoint; replaying skipped batches would
        # advance it twice.
        ignore_data_skip=curriculum_on,
    )
    if rl.epsilon_high is not None:  # None: TRL's own default (symmetric clipping)
        kwargs["epsilon_high"] = rl.epsilon_high
    if rl.vllm_max_model_length is not None:
        kwargs["vllm_max_model_length"] = rl.vllm_max_model_length
    kwargs.update(extra)
    kwargs.update(rl.trl)
    return trl_args(config_cls, **kwargs)


def trainer_class():
    from trl import GRPOTrainer

    return GRPOTrainer


def trainer_args(config: TrainingConfig, session: StageSession, curriculum_on: bool):
    from trl import GRPOConfig

    return online_args(GRPOConfig, config, session, curriculum_on,
                       scale_rewards=config.rl.scale_rewards, loss_type=config.rl.loss_type)
