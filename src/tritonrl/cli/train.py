"""``tritonrl sft`` and ``tritonrl rl``: training stages from a YAML config.

    tritonrl sft --config configs/smoke.yaml [--set sft.max_steps=5 ...] [--resume] [--run-dir runs/x]
    tritonrl rl --algo grpo|rloo|best-of-n --config configs/smoke.yaml [--set rl.steps=4] [--resume]

Progress is TRL's tqdm bar; the last line is a summary (run dir, steps, final loss/reward, manifest path).
Exit status: 0 done, 143 interrupted (SIGTERM/SIGINT/pre-emption; a checkpoint was saved, ``--resume``
continues), 2 for a config error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tritonrl.config import PipelineConfig, TrainingConfig, load_config


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="YAML file (see configs/)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config value, e.g. --set rl.steps=10 (repeatable)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest complete checkpoint (restored from the mirror if gone)")
    parser.add_argument("--run-dir", help="run directory (overrides run.run_dir)")


def register(subparsers) -> None:
    sft = subparsers.add_parser("sft", help="supervised fine-tuning on task/solution pairs (TRL SFTTrainer)")
    _common(sft)
    sft.set_defaults(func=_run_sft)
    rl = subparsers.add_parser("rl", help="RL on the verifier's reward: GRPO, RLOO or Best-of-N")
    rl.add_argument("--algo", choices=["grpo", "rloo", "best-of-n"], help="overrides rl.algo")
    _common(rl)
    rl.set_defaults(func=_run_rl)


def build_config(args: argparse.Namespace) -> TrainingConfig:
    overrides = list(args.overrides)
    if getattr(args, "algo", None):
        overrides.append(f"rl.algo={args.algo}")
    if args.run_dir:
        overrides.append(f"run.run_dir={args.run_dir}")
    if args.resume:
        overrides.append("run.resume=true")
    # PipelineConfig = TrainingConfig + the eval/pipeline sections, so one YAML serves sft, rl and pipeline.
    return load_config(args.config, overrides, schema=PipelineConfig)


def _summary(result) -> int:
    from tritonrl.train.session import EXIT_INTERRUPTED

    parts = [f"{result.stage} {result.status}", f"run_dir={result.run_dir}", f"steps={result.global_step}"]
    if result.final_loss is not None:
        parts.append(f"loss={result.final_loss:.4f}")
    if result.final_reward is not None:
        parts.append(f"reward={result.final_reward:.4f}")
    parts.append(f"manifest={Path(result.run_dir) / 'manifest.json'}")
    print("tritonrl: " + " ".join(parts), flush=True)
    if result.status == "interrupted":
        return EXIT_INTERRUPTED
    return 0 if result.status == "done" else 1


def _run_sft(args: argparse.Namespace) -> int:
    from tritonrl.train.sft import run_sft

    return _summary(run_sft(build_config(args)))


def _run_rl(args: argparse.Namespace) -> int:
    from tritonrl.train.rl import run_rl

    return _summary(run_rl(build_config(args)))
