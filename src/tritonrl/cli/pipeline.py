"""``tritonrl pipeline``: data -> SFT -> RL -> evaluate base/SFT/RL -> comparison report, resumable.

    tritonrl pipeline --config configs/smoke.yaml                 # tiny model, bundled tasks, CPU: minutes
    tritonrl pipeline --config configs/smoke.yaml --run-dir runs/x --set eval.k=2

Re-running the same command skips finished stages and resumes an interrupted one (see ``tritonrl.pipeline``).
The last line printed is the path of the comparison report.
"""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("pipeline", help="data -> SFT -> RL -> eval -> comparison report (resumable)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="YAML file (see configs/)")
    p.add_argument("--run-dir", help="run directory (overrides run.run_dir)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set eval.k=2 (repeatable)")
    p.set_defaults(func=run)


def run(args) -> int:
    from tritonrl.config import PipelineConfig, load_config
    from tritonrl.pipeline import run_pipeline

    overrides = list(args.overrides) + ([f"run.run_dir={args.run_dir}"] if args.run_dir else [])
    config = load_config(args.config, overrides, schema=PipelineConfig)
    report = run_pipeline(config)
    print(report)
    return 0
