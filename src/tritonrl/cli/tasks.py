"""``tritonrl tasks list|show|variants`` and ``tritonrl prompt``: look at tasks and what a model is shown.

    tritonrl tasks list bundled --level 2         # aligned table + level distribution
    tritonrl tasks list ~/KernelBench --json      # [{"name", "level", "origin", ...}]
    tritonrl tasks list kernelbook.jsonl          # filter report on stderr
    tritonrl tasks show l1_softmax                # source, level, reference solution or not, GPU timing shape
    tritonrl tasks variants l2_gemm_bias_relu     # the tiny / alt shapes' changed constants, the CPU's full trials
    tritonrl prompt l1_softmax                    # the chat messages for a task
    tritonrl tasks generate --n 64 --seed 0 --split heldout --out data/gen/heldout   # verified generated tasks

``tasks generate`` stopped by SIGTERM or Ctrl-C keeps every verdict so far (exit 143, Ctrl-C 130); the same command again
finishes it with the files an uninterrupted run writes (``tritonrl.taskgen``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tritonrl.errors import TaskError
from tritonrl.tasks import KernelTask, get_task, load_tasks_with_report
from tritonrl.tasks.levels import level_distribution

TASK_HELP = ("a bundled task's name (l1_relu), a KernelBench problem's (31_ELU, 12_Gemm_Multiply_LeakyReLU) when "
             "KERNELBENCH_DIR names a KernelBench clone, or a .py task file's path")


def register(subparsers: argparse._SubParsersAction) -> None:
    tasks = subparsers.add_parser("tasks", help="list and inspect tasks")
    sub = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="list the tasks of a source")
    listing.add_argument("source", help="'bundled', a KernelBench dir, a KernelBook .jsonl/.parquet, or a .py file")
    listing.add_argument("--level", type=int, default=None, help="only tasks of this level")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    listing.add_argument("--decontaminate", metavar="KERNELBENCH_DIR", default=None,
                         help="KernelBook: drop rows that match a task of this KernelBench clone "
                              "(default: $KERNELBENCH_DIR if set)")
    listing.set_defaults(func=cmd_list)

    show = sub.add_parser("show", help="print a task's source and facts")
    show.add_argument("task", help=TASK_HELP)
    show.set_defaults(func=cmd_show)

    variants = sub.add_parser("variants", help="print the shape variants of a task")
    variants.add_argument("task", help=TASK_HELP)
    variants.add_argument("--n", type=int, default=2, help="number of alternative-shape variants")
    variants.set_defaults(func=cmd_variants)

    generate = sub.add_parser("generate", help="write procedurally generated tasks with verified Triton references")
    generate.add_argument("--n", type=int, required=True, help="number of tasks to write")
    generate.add_argument("--seed", type=int, default=0, help="same seed, same files")
    generate.add_argument("--out", required=True, help="directory to write (level*/, solutions/, reports)")
    generate.add_argument("--split", choices=("train", "heldout"), default="train",
                          help="op combinations of this split only (held-out combinations never appear in train)")
    generate.add_argument("--split-salt", default=None,
                          help="(default: the project's first salt, tritonrl-split) salt of the hash that assigns op combinations to train or held-out: the same salt, "
                               "the same partition for every seed; a new salt, a held-out split no earlier run saw")
    generate.add_argument("--kernelbench", metavar="DIR", default=None,
                          help="drop tasks matching a task of this KernelBench clone (default: $KERNELBENCH_DIR)")
    generate.add_argument("--shape-scale", type=int, default=1,
                          help="multiply every shape by this (1: small, for the CPU interpreter; 8+ on a GPU)")
    generate.add_argument("--device", default="auto", help="where references are verified: auto, cpu, cuda")
    generate.add_argument("--workers", type=int, default=0, help="verifier processes (0: one per core or GPU)")
    generate.add_argument("--no-verify", action="store_true",
                          help="keep every draft without judging its reference (an RL prompt stream: the reward "
                               "reads only the PyTorch Model); the report says references_verified: false")
    generate.add_argument("--json", action="store_true", help="print the generation report as JSON")
    generate.set_defaults(func=cmd_generate)

    prompt = subparsers.add_parser("prompt", help="print the chat messages for a task")
    prompt.add_argument("task", help=TASK_HELP)
    prompt.add_argument("--template", default=None, help="prompt template file")
    prompt.set_defaults(func=cmd_prompt)


def cmd_list(args: argparse.Namespace) -> int:
    tasks, report = load_tasks_with_report(args.source, args.level, args.decontaminate)
    if report is not None:
        print(report.table(), file=sys.stderr)
    if args.json:
        rows = [{"name": t.name, "level": t.level, "origin": t.origin, "path": t.path,
                 "has_solution": t.solution is not None} for t in tasks]
        print(json.dumps(rows, indent=2))
        return 0
    width = max([len("name"), *(len(t.name) for t in tasks)])
    print(f"{'name':<{width}}  level  origin       solution")
    for t in tasks:
        print(f"{t.name:<{width}}  {t.level:>5}  {t.origin:<11}  {'yes' if t.solution else 'no'}")
    distribution = ", ".join(f"level {level}: {count}" for level, count in level_distribution(tasks).items())
    print(f"{len(tasks)} tasks ({distribution or 'none'})")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    import dataclasses

    from tritonrl.taskgen import SPLIT_SALT, default_verify_config, generate_tasks
    from tritonrl.tasks import decontamination_dir

    verify = dataclasses.replace(default_verify_config(), device=args.device, workers=args.workers)
    report = generate_tasks(args.n, args.seed, args.split, args.out, kernelbench_dir=decontamination_dir(args.kernelbench),
                            shape_scale=args.shape_scale, verify_config=verify, split_salt=args.split_salt or SPLIT_SALT,
                            verify_references=not args.no_verify)
    if args.json:
        print(json.dumps(dataclasses.asdict(report), indent=1))
    else:
        print(report.table())
        print(f"{report.kept} {args.split} tasks ({report.signatures} op combinations) in {args.out}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    task = get_task(args.task)
    print(f"# {task.name}  (level {task.level}, origin {task.origin})")
    if task.path:
        print(f"# path: {task.path}")
    print(f"# reference solution: {'yes' if task.solution else 'no'}")
    for line in _timing_lines(task):
        print(f"# {line}")
    print(task.source.rstrip())
    return 0


def _timing_lines(task: KernelTask) -> list[str]:
    """What a GPU runs this task at: its timing shape (bundled tasks), with the estimate behind the choice."""
    from tritonrl.tasks.variants import task_traffic, timing_shapes, timing_variant

    timing = timing_variant(task)
    if timing is None:
        return ["timing shape (GPU): as written" if task.origin != "bundled" else "timing shape (GPU): none"]
    changes = ", ".join(f"{name} {old} -> {new}" for name, (old, new) in timing.meta["changes"].items())
    lines = [f"timing shape (GPU full trials and timing): {changes}"]
    traffic = task_traffic(timing.source)
    if traffic is not None:
        lines.append(f"  estimate (H100): {traffic.est_ms:.3f} ms, {traffic.io_bytes / 2**20:.0f} MiB in/out, "
                     f"{(traffic.flops + traffic.conv_flops) / 1e9:.1f} GFLOP")
    entry = timing_shapes()[task.name]
    lines += [f"  {key.replace('_', ' ')}: {entry[key]}" for key in ("note", "below_target") if entry.get(key)]
    return lines


def cmd_variants(args: argparse.Namespace) -> int:
    from tritonrl.config import VerifyConfig
    from tritonrl.tasks.variants import alt_variants, describe_changes, tiny_variant
    from tritonrl.verify.parent.plan import build_trials

    task = get_task(args.task)
    try:
        variants = [tiny_variant(task)]
    except TaskError as exc:  # the plan goes on without one (its full trials judge the task): so does this listing
        variants = []
        print(f"tiny   none: {exc}")
    alts = alt_variants(task, n=args.n)
    for variant in [*variants, *alts]:
        print(f"{variant.variant:<6} {describe_changes(variant.meta.get('changes', {})) or '(unchanged: already small)'}")
    if not alts:
        print("(no alternative-shape variant runs for this task)")
    cpu = build_trials(task, VerifyConfig(), device="cpu")  # what a CPU's full trials run at (docs/evaluation.md)
    if cpu.declined:
        print(f"cpu    declined: {cpu.declined}")
    else:
        shown = describe_changes(cpu.reduced) or "as written (within the CPU budget)"
        print(f"cpu    full trials {'reduced: ' if cpu.reduced else ''}{shown}")
    return 0


def cmd_prompt(args: argparse.Namespace) -> int:
    from tritonrl.common.prompts import PromptTemplate, build_messages  # imported only when asked for

    task = get_task(args.task)
    template = None
    if args.template:
        path = Path(args.template).expanduser()
        if not path.is_file():
            raise TaskError(f"no such template file: {path}")
        template = PromptTemplate.from_file(path)
    for message in build_messages(task, template=template):
        print(f"--- {message['role']} ---")
        print(message["content"])
    return 0
