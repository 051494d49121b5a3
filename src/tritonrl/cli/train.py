"""``tritonrl sft`` and ``tritonrl rl``: training stages from a YAML config.

    tritonrl sft --config configs/smoke.yaml [--set sft.max_steps=5 ...] [--resume] [--run-dir runs/x]
    tritonrl rl --algo grpo|rloo|best-of-n --config configs/smoke.yaml [--set rl.steps=4] [--resume]

Progress is TRL's tqdm bar; the last line is a summary (run dir, steps, final loss/reward, manifest path).
Exit status: 0 done, 143 stopped by SIGTERM or a pre-emption, 130 by Ctrl-C (either way a checkpoint was saved
and ``--resume`` continues), 2 for a config error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tritonrl.cli.config import add_config_arguments, config_from_args
from tritonrl.config import TrainingConfig

# Flags that set a config key: type, choices and help come from the field in tritonrl.config (one declaration).
STAGE_FLAGS = {"--run-dir": "run.run_dir", "--resume": "run.resume"}
RL_FLAGS = {"--algo": "rl.algo", **STAGE_FLAGS}


def register(subparsers) -> None:
    sft = subparsers.add_parser("sft", help="supervised fine-tuning on task/solution pairs (TRL SFTTrainer)")
    add_config_arguments(sft, STAGE_FLAGS, set_example="sft.max_steps=10")
    sft.set_defaults(func=_run_sft, flags=STAGE_FLAGS)
    rl = subparsers.add_parser("rl", help="RL on the verifier's reward: GRPO, RLOO or Best-of-N")
    add_config_arguments(rl, RL_FLAGS)
    rl.set_defaults(func=_run_rl, flags=RL_FLAGS)


def build_config(args: argparse.Namespace) -> TrainingConfig:
    """The validated config (a bad value is a ConfigError here, before torch or TRL is imported).

    PipelineConfig = TrainingConfig + the eval/pipeline sections, so one YAML serves sft, rl and pipeline.
    """
    return config_from_args(args, args.flags)


def _summary(result) -> int:
    from tritonrl.common.signals import exit_status

    parts = [f"{result.stage} {result.status}", f"run_dir={result.run_dir}", f"steps={result.global_step}"]
    if result.final_loss is not None:
        parts.append(f"loss={result.final_loss:.4f}")
    if result.final_reward is not None:
        parts.append(f"reward={result.final_reward:.4f}")
    parts.append(f"manifest={Path(result.run_dir) / 'manifest.json'}")
    print("tritonrl: " + " ".join(parts), flush=True)
    if result.status == "interrupted":
        return exit_status(result.reason)
    return 0 if result.status == "done" else 1


def _run_sft(args: argparse.Namespace) -> int:
    config = build_config(args)  # first: a config error must not wait for the training stack to import
    from tritonrl.train.sft import run_sft

    return _summary(run_sft(config))


def _run_rl(args: argparse.Namespace) -> int:
    config = build_config(args)
    from tritonrl.train.rl import run_rl

    return _summary(run_rl(config))
