"""``tritonrl eval``, ``tritonrl report`` and ``tritonrl compare``: the commands over ``tritonrl.evaluation.evaluate`` and
``tritonrl.evaluation.report``. What ``eval --help`` shows is ``EVAL_DESCRIPTION`` (for users); this docstring is for us.

Defaults come from ``EvalConfig`` / ``VerifyConfig`` (or the ``eval``/``verify`` sections of ``--config``);
flags given on the command line override them. Each flag that sets a config key is generated from its field
(type, choices, help), as ``tritonrl sft``/``rl``'s are. Each verdict is printed as it lands
(``tritonrl.cli.verdicts``), then, on a terminal, a table of them all, then the summary.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
from pathlib import Path

from tritonrl.cli import verdicts
from tritonrl.cli.config import add_field_flag, config_from_args, flag_value
from tritonrl.common.result_log import finished_rows
from tritonrl.config import EvalConfig, PipelineConfig, VerifyConfig
from tritonrl.errors import Stopped, UserError
from tritonrl.evaluation.report import RESULTS_JSONL

FLAGS = {  # flag -> config key; typed and documented from the field (tritonrl.config)
    "--tasks": "eval.tasks", "--level": "eval.level", "--max-tasks": "eval.max_tasks", "--k": "eval.k",
    "--temperature": "eval.temperature", "--max-new-tokens": "eval.max_new_tokens", "--backend": "eval.backend",
    "--device": "eval.device", "--timeout": "verify.timeout_s", "--workers": "verify.workers",
    "--tolerance": "verify.tolerance", "--turns": "eval.turns", "--refine-for-speed": "eval.refine_for_speed",
}
NOTES = {
    "--tasks": "; with --model, or with --solutions to match files to problems (12.py, level2_12.py)",
    "--level": "; with --solutions, the files of other levels are left out",
    "--max-tasks": " (with --model)",
    "--device": "; the verifier's too (verify.device)",
}
EVAL_DESCRIPTION = """\
Judge Triton kernels with the full verifier and report: correct rate, pass@k, fast_p, failures.
The kernels come from a model (--model), a file of model outputs (--completions) or a directory of
.py files (--solutions). Each verdict is printed as it lands (file, task, verdict, stage: flag,
seconds), then on a terminal a table of them all, then a summary line; every sample is also kept in
OUT/results.jsonl and summed up in OUT/report.md.

examples:
  tritonrl eval --solutions my_kernels/ --out out/mine       # file name = task name (l1_relu.py)
  tritonrl eval --solutions kb/ --tasks ~/KernelBench --level 2 --out out/kb   # 12.py -> problem 12
  tritonrl eval --completions outputs.jsonl --out out/x      # {"task": ..., "completion": ...} lines
  tritonrl eval --model Qwen/Qwen2.5-Coder-7B-Instruct --k 4 --temperature 0.7 --out out/base
  tritonrl eval ... --out out/x --resume                     # finish a stopped run

Ctrl-C stops after the verdicts under way (exit 130; SIGTERM: 143; --resume finishes the run); a
second Ctrl-C stops at once (exit 130). Tolerances, metrics and outputs: docs/evaluation.md."""


def register(subparsers) -> None:
    p = subparsers.add_parser("eval", help="judge a model's, a file's or a directory's kernels and report",
                              description=EVAL_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p.add_argument("--json", action="store_true", help="print one JSON object per verdict, then a {\"summary\": "
                                                       "...} line (no table, no progress line)")
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
    from tritonrl.util.progress import Display

    gen, verify = configs_from_args(args)
    out = Path(args.out)
    check_out_dir(out, args.resume or args.overwrite)
    display = Display(verdicts.VerdictPrinter(args.json), progress=False if args.json else None)
    with RunStatus(out, resume_command(getattr(args, "argv", None))) as status:
        try:
            report = _evaluate(args, gen, verify, display)
        except Stopped as exc:  # SIGTERM/SIGINT: what was done is in --out
            exc.hint = "the same command with --resume continues"
            status.reason = f"stopped by {exc.reason}"
            raise
    if args.json:
        print(verdicts.summary_json(report, out), flush=True)
        return 0
    if verdicts.is_terminal():
        print("\n".join(["", *verdicts.table(finished_rows(out / RESULTS_JSONL)), ""]))
    _print_summary(report, out)
    return 0


def _evaluate(args, gen: EvalConfig, verify: VerifyConfig, display) -> dict:
    from tritonrl.evaluation import evaluate
    from tritonrl.tasks import select_tasks

    if args.completions:
        return evaluate.evaluate_completions(args.completions, verify, args.out, resume=args.resume,
                                             turns=gen.turns if gen.turns > 1 else None,
                                             refine_for_speed=gen.refine_for_speed, display=display)
    if args.solutions:
        if gen.turns > 1:
            raise UserError(f"--turns {gen.turns}: a solutions directory holds one attempt per sample; refinement "
                            "needs a model (--model) or a completions file with 'turn' fields")
        given = flag_value(args, "eval.tasks")
        tasks = select_tasks(given) if given else None  # every level: --level selects the files
        return evaluate.evaluate_solutions(args.solutions, verify, args.out, tasks=tasks, resume=args.resume,
                                           level=gen.level, display=display)
    tasks = select_tasks(gen.tasks, gen.level, gen.max_tasks)
    return evaluate.evaluate(args.model, tasks, gen.k, gen, verify, args.out, resume=args.resume, display=display)


def check_out_dir(out: Path, allowed: bool) -> None:
    """A run never replaces another's results by accident: ``--out`` must be new or empty, unless ``--resume`` or
    ``--overwrite`` says what to do with what is there. The refusal names the one flag that fits: ``--resume``
    for a run that did not finish (``status.json`` says so, or results without a report), ``--overwrite`` for a
    finished one or anything else."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    found = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if allowed or not found:
        return
    results, status = out / RESULTS_JSONL, RunStatus.read(out)
    held = f"{len(finished_rows(results))} results in {results.name}" if results.is_file() else \
        ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    unfinished = status.get("status") in ("running", "interrupted") if status else \
        results.is_file() and not (out / "report.json").is_file()
    if unfinished:
        why = f": {status['reason']}" if status.get("reason") else ""
        raise UserError(f"--out {out} holds an eval that did not finish ({held}{why}); add --resume to finish it "
                        "(--overwrite starts it again)")
    if results.is_file():
        raise UserError(f"--out {out} holds a finished eval ({held}); add --overwrite to replace it, or give another "
                        "directory")
    raise UserError(f"--out {out} holds other files ({held}); give another directory, or add --overwrite to write "
                    "the eval's files among them")


class RunStatus:
    """``OUT/status.json``: ``running`` while the eval runs (what a killed one leaves), then ``done``, or
    ``interrupted`` with why (Ctrl-C, SIGTERM, stdout closed: ``tritonrl eval ... | head``) and the command that
    finishes it. A run that wrote no sample leaves nothing: no status, and no directory it made."""

    FILE = "status.json"

    def __init__(self, out: Path, resume: str) -> None:
        self.out, self.resume, self.reason = out, resume, None
        self.made = not out.exists()

    def __enter__(self) -> RunStatus:
        self._write("running")
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self._write("done")
            return
        if not any((self.out / name).is_file() and (self.out / name).stat().st_size
                   for name in (RESULTS_JSONL, "completions.jsonl")):
            (self.out / self.FILE).unlink(missing_ok=True)
            if self.made and not any(self.out.iterdir()):
                self.out.rmdir()
            return
        self.reason = self.reason or ("stdout was closed" if issubclass(kind, BrokenPipeError) else
                                      "Ctrl-C" if issubclass(kind, KeyboardInterrupt) else
                                      f"{kind.__name__}: {exc}")
        self._write("interrupted")

    def _write(self, state: str) -> None:
        from tritonrl.util.atomic import write_atomic

        record = {"status": state}
        if state != "done":
            record.update(reason=self.reason, resume=self.resume)
        write_atomic(self.out / self.FILE, json.dumps({k: v for k, v in record.items() if v}, indent=1) + "\n")

    @classmethod
    def read(cls, out: Path) -> dict:
        try:
            record = json.loads((out / cls.FILE).read_text())
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}


def resume_command(argv: list[str] | None) -> str:
    """The command line that finishes this eval: the same one, with ``--resume`` (and without ``--overwrite``)."""
    if argv is None:
        return "the same command with --resume"
    return shlex.join(["tritonrl", *[a for a in argv if a not in ("--resume", "--overwrite")], "--resume"])


def run_report(args) -> int:
    from tritonrl.evaluation import report as rep

    rows = rep.load_results(args.results)
    source = Path(args.results)
    out = Path(args.out) if args.out else (source if source.is_dir() else source.parent)
    built = rep.write_report(rows, out, {"results": str(source)})
    rep.print_warnings(built, out)
    _print_summary(built, out)
    return 0


def run_compare(args) -> int:
    from tritonrl.evaluation.report import compare_runs

    comparison = compare_runs(args.runs, args.out)
    print(Path(args.out, "comparison.md").read_text())
    print(f"comparison: {Path(args.out, 'comparison.md')} ({len(comparison['runs'])} runs)")
    return 0


def _print_summary(report: dict, out: Path) -> None:
    from tritonrl.util.render import fmt

    rates = ", ".join(f"{name} {fmt(report[f'{name}_rate'])}" for name in ("format", "valid", "compiled", "correct"))
    passes = ", ".join(f"{k} {fmt(v)}" for k, v in report["pass_at_k"].items())
    first = "first-attempt " if "turns" in report else ""
    print(f"{report['n_samples']} {first}samples, {report['n_tasks']} tasks: {rates}; {passes}")
    if report.get("pass_at_k_note"):
        print(report["pass_at_k_note"])
    if report.get("meta", {}).get("left_out"):
        print(f"left out by --level: {report['meta']['left_out']}")
    if report.get("n_verifier_errors"):
        print(f"{report['n_verifier_errors']} verifier errors (the verifier failed, not the kernel): left out of "
              "the rates; the same command with --resume judges them again")
    if report.get("n_declined"):
        print(f"{report['n_declined']} declined (tasks this device cannot judge within its budget: "
              f"{', '.join(report['declined_tasks'])}): neither correct nor wrong, left out of the rates")
    for turn in report.get("turns", {}).get("per_turn", []):
        t, speedup = turn["turn"], fmt(turn["speedup"], False, "null (not timed)")
        print(f"turn {t}: {turn['attempts']} attempts; correct@{t} {fmt(turn['correct'])}, "
              f"fast_1@{t} {fmt(turn['fast_p']['fast_1'], unavailable='null')}, speedup@{t} {speedup}")
    print(f"report: {out / 'report.md'}")
