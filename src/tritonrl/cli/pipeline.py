"""``tritonrl pipeline``: data -> SFT -> RL -> evaluate base/SFT/RL -> comparison report, resumable.

    tritonrl pipeline --config configs/smoke.yaml                 # tiny model, bundled tasks, CPU: minutes
    tritonrl pipeline --config configs/smoke.yaml --run-dir runs/x --set eval.k=2

Re-running the same command skips finished stages and resumes an interrupted one (see ``tritonrl.pipeline``).
The last line printed is the path of the comparison report. Exit status: 0 done, 143 a stage was stopped by
SIGTERM or a pre-emption, 130 by Ctrl-C (run the same command again), 2 a bad config or input.
"""

from __future__ import annotations

import argparse

from tritonrl.cli.config import add_config_arguments, config_from_args

DESCRIPTION = """\
Run everything from one config: data -> SFT -> RL -> evaluate base, SFT and RL -> comparison report.

  tritonrl pipeline --config configs/smoke.yaml                 # tiny model, bundled tasks, CPU: minutes
  tritonrl pipeline --config configs/smoke.yaml --run-dir runs/x --set eval.k=2

Running the same command again skips finished stages and resumes an interrupted one. The last line
printed is the path of the comparison report. Exit status: 0 done, 143 a stage was stopped by
SIGTERM or a pre-emption, 130 by Ctrl-C (run the same command again), 2 a bad config or input."""
FLAGS = {"--run-dir": "run.run_dir"}  # typed and documented from the config field (tritonrl.config)


def register(subparsers) -> None:
    p = subparsers.add_parser("pipeline", help="data -> SFT -> RL -> eval -> comparison report (resumable)",
                              description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_arguments(p, FLAGS, set_example="eval.k=2")
    p.set_defaults(func=run)


def run(args) -> int:
    config = config_from_args(args, FLAGS)  # validated before the training stack is imported
    from tritonrl.pipeline import run_pipeline

    report = run_pipeline(config)
    print(report)
    return 0
