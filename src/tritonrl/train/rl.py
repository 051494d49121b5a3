"""RL entry point: ``run_rl(config)`` runs GRPO, RLOO (TRL trainers) or Best-of-N on the verifier's reward.

    tritonrl rl --algo grpo --config configs/smoke.yaml [--set rl.steps=4] [--resume]

The starting model is ``model.name_or_path``, or with ``rl.init_from: sft`` exactly the model the run's SFT
stage recorded in the manifest. Prompts are sampled by the adaptive curriculum (``rl.curriculum``), whose
state is saved with every checkpoint and restored on resume.

Every online run ends by writing its learning-signal health (``<run_dir>/<stage>/signal_health.{md,json,png}``:
per-step reward mean and std, share of zero-variance groups, KL, completion length, verification time) and
printing a warning when no step had any reward variance (``tritonrl.report.signal_health``).
"""

from __future__ import annotations

import importlib.util

from tritonrl.config import RLRunConfig, TrainingConfig
from tritonrl.curriculum import Curriculum, CurriculumSampler
from tritonrl.errors import ConfigError
from tritonrl.train import ranks
from tritonrl.train.data import load_training_tasks, rl_rows, to_dataset
from tritonrl.train.manifest import RunManifest
from tritonrl.train.models import load_model, resolve_model_path
from tritonrl.train.ranks import rank_verifier
from tritonrl.train.rewards import AsyncVerifierReward, VerifierReward
from tritonrl.train.session import StageSession, peft_config
from tritonrl.train.sft import StageResult, last_logged

ALGOS = ("grpo", "rloo", "best-of-n")


def stage_name(algo: str) -> str:
    return algo.replace("-", "_")


def check_rl_config(rl: RLRunConfig) -> None:
    if rl.algo not in ALGOS:
        raise ConfigError(f"unknown rl.algo {rl.algo!r}; choose one of {', '.join(ALGOS)}")
    if rl.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ConfigError("rl.use_vllm=true needs vLLM installed (pip install vllm); "
                          "set rl.use_vllm=false to generate with transformers")


def init_model_path(config: TrainingConfig, manifest: RunManifest) -> str:
    """The model this stage starts from: a previous stage's recorded output, or the configured model."""
    if config.rl.init_from:
        return manifest.output(config.rl.init_from, "model")
    return resolve_model_path(config.model.name_or_path)


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


def run_rl(config: TrainingConfig, verifier=None) -> StageResult:
    """Run ``config.rl.algo``; ``verifier`` replaces the real one (tests)."""
    check_rl_config(config.rl)
    if config.rl.algo == "best-of-n":
        from tritonrl.train.best_of_n import run_best_of_n

        return run_best_of_n(config, verifier=verifier)
    from tritonrl.train import grpo, rloo

    return run_online(config, grpo if config.rl.algo == "grpo" else rloo, verifier)


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


def run_online(config: TrainingConfig, algo_module, verifier=None) -> StageResult:
    stage = stage_name(config.rl.algo)
    tasks = load_training_tasks(config.data)
    rows = rl_rows(tasks, config.data.prompt_template)
    dataset = to_dataset(rows)
    curriculum = Curriculum(config.curriculum) if config.rl.curriculum else None
    session = StageSession(config, stage)
    args = algo_module.trainer_args(config, session, curriculum is not None)  # first: ranks, ZeRO-3 model load
    reward, rollout = make_reward(config, tasks, rows, verifier or rank_verifier(config.verify), curriculum)
    with session:
        init = init_model_path(config, session.manifest)
        if ranks.is_main():
            session.manifest.record(stage, init_model=init)
        model, tokenizer = load_model(config.model, init)
        trainer = with_curriculum(algo_module.trainer_class())(
            model=model, reward_funcs=[reward], train_dataset=dataset, processing_class=tokenizer,
            args=args, peft_config=peft_config(config),
            callbacks=session.callbacks({"curriculum": curriculum} if curriculum else {}),
            **rollout,
        )
        trainer.curriculum = curriculum
        trainer.train(resume_from_checkpoint=session.resume_checkpoint())
        final = None
        if not session.stopped:
            extra = {"curriculum": curriculum.state_dict()} if curriculum else {}
            final = session.save_final(trainer, tokenizer, base_model=init, metrics=extra)
    history = trainer.state.log_history
    _report_signal_health(history, session.stage_dir)
    return StageResult(stage, session.status, str(session.run_dir), trainer.state.global_step,
                       final_loss=last_logged(history, "loss"), final_reward=last_logged(history, "reward"),
                       model_path=str(final) if final else None)


def _report_signal_health(log_history: list[dict], stage_dir) -> None:
    import sys

    from tritonrl.report import write_signal_health

    health = write_signal_health(log_history, stage_dir)
    if health["no_signal"]:
        print(f"tritonrl: WARNING: no learning signal: every logged step had all reward groups at zero variance "
              f"(see {stage_dir}/signal_health.md)", file=sys.stderr)
