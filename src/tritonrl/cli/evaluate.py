"""``tritonrl eval``, ``tritonrl report`` and ``tritonrl compare``: thin wrappers over evaluate and report.

    tritonrl eval --model M --tasks bundled --level 1 --k 4 --temperature 0.7 --out out/base
    tritonrl eval --completions examples/golden/completions.jsonl --timeout 10 --out out/golden
    tritonrl eval --solutions my_kernels/ --out out/mine      # file stem = bundled task name
    tritonrl eval --solutions kb/ --tasks ~/KernelBench --level 2 --out out/kb   # 12.py, level2_12.py, 12_Gemm...py
    tritonrl eval --completions c.jsonl --out out/x --resume  # after a stop: judge only the samples not in results
    tritonrl eval --completions c.jsonl --out out/x --overwrite   # start again (a non-empty --out is refused)
    tritonrl eval --model M --turns 3 --out out/t             # refinement: correct@1..3, speedup@1..3
    tritonrl eval --completions turns.jsonl --out out/r       # replay trajectories (rows with turn, sample)
    tritonrl report out/base/results.jsonl --out out/base     # rebuild the report, no GPU or model needed
    tritonrl compare out/base out/sft out/rl --out out/compare

SIGTERM or Ctrl-C stops after the generate call or verdict under way, keeping the completions and verdicts so far
in --out (exit 143); a second Ctrl-C stops at once (exit 130); --resume goes on from what was kept.

Defaults come from ``EvalConfig`` / ``VerifyConfig`` (or the ``eval``/``verify`` sections of ``--config``);
flags given on the command line override them. Each flag that sets a config key is generated from its field
(type, choices, help), as ``tritonrl sft``/``rl``'s are.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from tritonrl.cli.config import add_field_flag, config_from_args, flag_value
from tritonrl.config import EvalConfig, PipelineConfig, VerifyConfig
from tritonrl.errors import Stopped, UserError
from tritonrl.report import RESULTS_JSONL
from tritonrl.results import finished_rows

FLAGS = {  # flag -> config key; typed and documented from the field (tritonrl.config)
    "--tasks": "eval.tasks", "--level": "eval.level", "--max-tasks": "eval.max_tasks", "--k": "eval.k",
    "--temperature": "eval.temperature", "--max-new-tokens": "eval.max_new_tokens", "--backend": "eval.backend",
    "--device": "eval.device", "--timeout": "verify.timeout_s", "--workers": "verify.workers",
    "--turns": "eval.turns", "--refine-for-speed": "eval.refine_for_speed",
}
NOTES = {
    "--tasks": "; with --model, or with --solutions to match files to problems (12.py, level2_12.py)",
    "--level": " (with --model, or --solutions --tasks)",
    "--max-tasks": " (with --model)",
    "--device": "; the verifier's too (verify.device)",
}


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="sample, verify and report: rates, pass@k, fast_p",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="hub id, local model/adapter dir, or run dir (RUN_DIR[:stage])")
    source.add_argument("--completions", help="JSONL of {task, completion} generated elsewhere")
    source.add_argument("--solutions", help="directory of hand-written kernels: file stem = task name, or with "
                                            "--tasks DIR the problem number (12.py, level2_12.py)")
    p.add_argument("--config", help="YAML whose eval: and verify: sections give the defaults")
    for flag, key in FLAGS.items():
        add_field_flag(p, flag, key, NOTES.get(flag, ""))
    p.add_argument("--out", required=True, help="output directory (refused when it holds anything, unless "
                                                 "--resume or --overwrite)")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--resume", action="store_true",
                       help="keep the samples in OUT/results.jsonl (not verifier errors) and judge the rest")
    again.add_argument("--overwrite", action="store_true", help="replace OUT's results and report")
    p.set_defaults(func=run_eval, overrides=[])

    p = subparsers.add_parser("report", help="rebuild report.json/report.md/plots from results.jsonl")
    p.add_argument("results", help="results.jsonl (or the directory holding it)")
    p.add_argument("--out", help="output directory (default: next to the results)")
    p.set_defaults(func=run_report)

    p = subparsers.add_parser("compare", help="compare runs (eval dirs or pipeline run dirs): table + plot")
    p.add_argument("runs", nargs="+", help="eval dirs with report.json, or pipeline run dirs")
    p.add_argument("--out", required=True, help="output directory")
    p.set_defaults(func=run_compare)


def configs_from_args(args) -> tuple[EvalConfig, VerifyConfig]:
    """Dataclass defaults, then ``--config``'s sections, then the flags that were given (checked as the config
    is: a bad value is a one-line error naming the key)."""
    config = config_from_args(args, FLAGS, schema=PipelineConfig)
    device = flag_value(args, "eval.device")
    verify = dataclasses.replace(config.verify, device=device) if device is not None else config.verify
    return config.eval, verify


def run_eval(args) -> int:
    gen, verify = configs_from_args(args)
    check_out_dir(Path(args.out), args.resume or args.overwrite)
    try:
        report = _evaluate(args, gen, verify)
    except Stopped as exc:  # SIGTERM/SIGINT: what was done is in --out
        exc.hint = "the same command with --resume continues"
        raise
    _print_summary(report, Path(args.out))
    return 0


def _evaluate(args, gen: EvalConfig, verify: VerifyConfig) -> dict:
    from tritonrl import evaluate
    from tritonrl.tasks import select_tasks

    if args.completions:
        return evaluate.evaluate_completions(args.completions, verify, args.out, resume=args.resume,
                                             turns=gen.turns if gen.turns > 1 else None,
                                             refine_for_speed=gen.refine_for_speed)
    if args.solutions:
        if gen.turns > 1:
            raise UserError(f"--turns {gen.turns}: a solutions directory holds one attempt per sample; refinement "
                            "needs a model (--model) or a completions file with 'turn' fields")
        given = flag_value(args, "eval.tasks")
        tasks = select_tasks(given, gen.level) if given else None
        return evaluate.evaluate_solutions(args.solutions, verify, args.out, tasks=tasks, resume=args.resume,
                                           level=gen.level)
    tasks = select_tasks(gen.tasks, gen.level, gen.max_tasks)
    return evaluate.evaluate(args.model, tasks, gen.k, gen, verify, args.out, resume=args.resume)


def check_out_dir(out: Path, allowed: bool) -> None:
    """A run never replaces another's results by accident: ``--out`` must be new or empty, unless ``--resume`` or
    ``--overwrite`` says what to do with what is there."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    found = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if allowed or not found:
        return
    results = out / RESULTS_JSONL
    if results.is_file():
        held = f"{len(finished_rows(results))} results in {results.name}"
    else:
        held = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    raise UserError(f"--out {out} is not empty ({held}); add --resume to finish that run, --overwrite to replace "
                    "it, or give another directory")


def run_report(args) -> int:
    from tritonrl import report as rep

    rows = rep.load_results(args.results)
    source = Path(args.results)
    out = Path(args.out) if args.out else (source if source.is_dir() else source.parent)
    built = rep.write_report(rows, out, {"results": str(source)})
    rep.print_warnings(built)
    _print_summary(built, out)
    return 0


def run_compare(args) -> int:
    from tritonrl.report import compare_runs

    comparison = compare_runs(args.runs, args.out)
    print(Path(args.out, "comparison.md").read_text())
    print(f"comparison: {Path(args.out, 'comparison.md')} ({len(comparison['runs'])} runs)")
    return 0


def _print_summary(report: dict, out: Path) -> None:
    from tritonrl.report import fmt

    rates = ", ".join(f"{name} {fmt(report[f'{name}_rate'])}" for name in ("format", "valid", "compiled", "correct"))
    passes = ", ".join(f"{k} {fmt(v)}" for k, v in report["pass_at_k"].items())
    first = "first-attempt " if "turns" in report else ""
    print(f"{report['n_samples']} {first}samples, {report['n_tasks']} tasks: {rates}; {passes}")
    if report.get("n_verifier_errors"):
        print(f"{report['n_verifier_errors']} verifier errors (the verifier failed, not the kernel): left out of "
              "the rates; the same command with --resume judges them again")
    for turn in report.get("turns", {}).get("per_turn", []):
        t, speedup = turn["turn"], fmt(turn["speedup"], False, "null (not timed)")
        print(f"turn {t}: {turn['attempts']} attempts; correct@{t} {fmt(turn['correct'])}, "
              f"fast_1@{t} {fmt(turn['fast_p']['fast_1'], unavailable='null')}, speedup@{t} {speedup}")
    print(f"report: {out / 'report.md'}")
