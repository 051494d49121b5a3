"""RL entry point: ``run_rl(config)`` runs GRPO, RLOO (TRL trainers) or Best-of-N on the verifier's reward.

    tritonrl rl --algo grpo --config configs/smoke.yaml [--set rl.steps=4] [--resume]

``run_rl`` finds ``rl.algo`` in the registry (``tritonrl.common.stages``). The online algorithms (GRPO, RLOO) share
what is here: ``online_args`` (the TRL arguments both configs take) and ``run_online`` (dataset, reward,
curriculum, trainer, session); ``tritonrl.train.grpo`` and ``tritonrl.train.rloo`` add their own arguments and
trainer class. The starting model is ``model.name_or_path``, or with ``rl.init_from: sft`` exactly the model the
run's SFT stage recorded in the manifest. Prompts are sampled by the adaptive curriculum (``rl.curriculum``),
whose state is saved with every checkpoint and restored on resume.

Every online run ends by writing its learning-signal health (``<run_dir>/<stage>/signal_health.{md,json,png}``:
per-step reward mean and std, share of zero-variance groups, KL, completion length, verification time) and
printing a warning when no step had any reward variance (``tritonrl.train.health.signal_health``).
"""

from __future__ import annotations

import importlib.util

from tritonrl.common import ranks, stages
from tritonrl.common.llm import load_model
from tritonrl.common.ranks import rank_verifier
from tritonrl.common.stages import StageResult, init_model_path, last_logged, stage_name
from tritonrl.config import RLRunConfig, TrainingConfig
from tritonrl.errors import ConfigError
from tritonrl.train.curriculum import Curriculum, CurriculumSampler
from tritonrl.train.data import load_training_tasks, rl_rows, to_dataset
from tritonrl.train.fast_generation import install_generation
from tritonrl.train.reward_adapters import AsyncVerifierReward, VerifierReward
from tritonrl.train.reward_overlap import install_overlap, with_reward_overlap
from tritonrl.train.stage_session import StageSession, gradient_checkpointing, peft_config, trl_args
from tritonrl.train.step_rewards import install_step_rewards, with_step_rewards


def check_rl_config(rl: RLRunConfig) -> None:
    stages.algorithm(rl.algo)  # a one-line error for an unknown name
    if rl.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ConfigError("rl.use_vllm=true needs vLLM installed (pip install vllm); "
                          "set rl.use_vllm=false to generate with transformers")


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


def with_curriculum(trainer_cls):
    """``trainer_cls`` (GRPOTrainer / RLOOTrainer) drawing prompts from ``self.curriculum`` when it is set."""

    class CurriculumTrainer(trainer_cls):
        curriculum: Curriculum | None = None

        def _get_train_sampler(self, dataset=None):
            if self.curriculum is None:
                return super()._get_train_sampler(dataset)
            dataset = dataset if dataset is not None else self.train_dataset
            return CurriculumSampler(
                dataset["level"], self.curriculum, mini_repeat_count=self.num_generations,
                batch_size=self.args.generation_batch_size // self.num_generations,
                repeat_count=self.num_iterations * self.args.steps_per_generation,
            )

    CurriculumTrainer.__name__ = f"Curriculum{trainer_cls.__name__}"
    return CurriculumTrainer


def trainer_class(config: TrainingConfig, trainer_cls):
    """``trainer_cls`` with the curriculum sampler, and with ``rl.turns > 1`` the within-turn advantages
    (``tritonrl.train.multiturn.with_turn_baselines``)."""
    cls = with_curriculum(trainer_cls)
    if config.rl.turns > 1:
        from tritonrl.train.multiturn import with_turn_baselines

        cls = with_turn_baselines(cls)
    if config.rl.generation_chunks > 1:
        cls = with_reward_overlap(cls)
    if config.rl.reward_beside_training:
        cls = with_step_rewards(cls)
    return cls


def build_trainer(config: TrainingConfig, trainer_cls, args, model, tokenizer, dataset, rows: list[dict], reward,
                  rollout: dict, callbacks: list, compile_anywhere: bool = False):
    """The online trainer with its generation (``rl.generation``: ``install_generation``) and, with
    ``rl.generation_chunks > 1``, the reward beside generation (``install_overlap``). ``compile_anywhere``:
    compile the decode step on any device (tests, the benchmark's CPU rehearsal)."""
    trainer = trainer_class(config, trainer_cls)(
        model=model, reward_funcs=[reward], train_dataset=dataset, processing_class=tokenizer,
        args=args, peft_config=peft_config(config), callbacks=callbacks, **rollout,
    )
    install_generation(trainer, config, [row["prompt"] for row in rows], compile_anywhere=compile_anywhere)
    background = install_overlap(trainer, reward, config.rl.generation_chunks, trainer.accelerator.device.type,
                                 config.rl.generation_switch_interval_ms)
    if background is not None and config.rl.reward_beside_training:
        install_step_rewards(trainer, config.rl.generation_chunks)
    return trainer


def run_rl(config: TrainingConfig, verifier=None) -> StageResult:
    """Run ``config.rl.algo``; ``verifier`` replaces the real one (tests)."""
    check_rl_config(config.rl)
    return stages.algorithm(config.rl.algo).run(config, verifier=verifier)


def make_reward(config: TrainingConfig, tasks: list, rows: list[dict], verifier=None, curriculum=None):
    """(reward function, extra trainer arguments): with ``rl.turns > 1`` the multi-turn reward and its
    ``rollout_func`` (``tritonrl.train.multiturn``), else the single-turn verifier reward."""
    if config.rl.turns > 1:
        from tritonrl.train.multiturn import refinement_reward

        reward = refinement_reward(config, tasks, rows, verifier, curriculum)
        return reward, {"rollout_func": reward.rollout}
    reward_cls = AsyncVerifierReward if config.rl.async_reward else VerifierReward
    return reward_cls({t.key: t for t in tasks}, verifier=verifier, verify_config=config.verify,
                      reward_config=config.reward, curriculum=curriculum, group_size=config.rl.num_generations,
                      cache=config.rl.verify_cache, shuffle=config.rl.shuffle_rewards, seed=config.run.seed), {}


def run_online(config: TrainingConfig, trainer_cls, trainer_args, verifier=None) -> StageResult:
    """One GRPO/RLOO stage: ``trainer_cls`` (TRL's trainer) with ``trainer_args(config, session, curriculum_on)``."""
    stage = stage_name(config.rl.algo)
    tasks = load_training_tasks(config.data)
    rows = rl_rows(tasks, config.data.prompt_template)
    dataset = to_dataset(rows)
    curriculum = Curriculum(config.curriculum) if config.rl.curriculum else None
    session = StageSession(config, stage)
    args = trainer_args(config, session, curriculum is not None)  # first: ranks, ZeRO-3 model load
    reward, rollout = make_reward(config, tasks, rows, verifier or rank_verifier(config.verify), curriculum)
    with session:
        init = init_model_path(config, session.manifest)
        if ranks.is_main():
            session.manifest.record(stage, init_model=init)
        model, tokenizer = load_model(config.model, init)
        trainer = build_trainer(config, trainer_cls, args, model, tokenizer, dataset, rows, reward, rollout,
                                session.callbacks({"curriculum": curriculum} if curriculum else {})
                                + no_signal_stop(config, reward, session.stage_dir))
        trainer.curriculum = curriculum
        try:
            trainer.train(resume_from_checkpoint=session.resume_checkpoint())
        finally:
            if getattr(reward, "background", None) is not None:
                reward.background.close()
        final = None
        if not session.agreed_stop():  # every rank the same answer: all save or none (signals.agree)
            extra = {"curriculum": curriculum.state_dict()} if curriculum else {}
            final = session.save_final(trainer, tokenizer, base_model=init, metrics=extra)
    history = trainer.state.log_history
    if ranks.is_main():  # one report per run (every rank logs the same, gathered, history)
        _report_signal_health(history, session.stage_dir)
    return StageResult(stage, session.status, str(session.run_dir), trainer.state.global_step,
                       final_loss=last_logged(history, "loss"), final_reward=last_logged(history, "reward"),
                       model_path=str(final) if final else None, reason=session.stop_reason)


NO_SIGNAL_FILE = "stopped_no_signal.json"


def no_signal_stop(config: TrainingConfig, reward, stage_dir) -> list:
    """``rl.stop_without_signal`` = N > 0: a callback that, at step N, stops training when at least
    ``rl.no_signal_share`` of the reward groups so far had zero variance (GRPO's advantage, hence its gradient,
    is zero there), writes ``<stage_dir>/stopped_no_signal.json`` and says so. More steps would only drift."""
    if not config.rl.stop_without_signal or not hasattr(reward, "health"):
        return []
    import json
    import sys
    from pathlib import Path

    from transformers import TrainerCallback

    after, threshold = config.rl.stop_without_signal, config.rl.no_signal_share

    class NoSignalStop(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step != after or not reward.health:
                return control
            shares = [h.get("signal/frac_zero_std_groups", 0.0) for h in reward.health]
            share = sum(shares) / len(shares)
            if share >= threshold:
                message = (f"stopped at step {after}: {share:.0%} of the reward groups had zero variance (no "
                           f"gradient), at least rl.no_signal_share={threshold:g}; the SFT model's samples of a task "
                           "are all right or all wrong")
                Path(stage_dir).mkdir(parents=True, exist_ok=True)
                (Path(stage_dir) / NO_SIGNAL_FILE).write_text(json.dumps(
                    {"step": after, "zero_variance_share": share, "threshold": threshold, "message": message}) + "\n")
                print(f"tritonrl: WARNING: {message}", file=sys.stderr)
                control.should_training_stop = True
            return control

    return [NoSignalStop()]


def _report_signal_health(log_history: list[dict], stage_dir) -> None:
    import sys

    from tritonrl.train.health import write_signal_health

    health = write_signal_health(log_history, stage_dir)
    if health["no_signal"]:
        print(f"tritonrl: WARNING: no learning signal: every logged step had all reward groups at zero variance "
              f"(see {stage_dir}/signal_health.md)", file=sys.stderr)
