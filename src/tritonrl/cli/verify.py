"""``tritonrl verify``: judge candidate solutions of one task with the full verifier funnel.

    tritonrl verify --task l1_relu --solution my_relu.py            # one file; exit 0 if correct
    tritonrl verify --task l1_relu --completion model_output.txt    # a raw model completion
    tritonrl verify --task task.py --solution cands/ --json         # a directory, in parallel; JSON lines

Verdicts stream: each candidate's line (with ``--json`` one JSON object, with its ``file``) is printed as soon as
it is judged, in the order they finish; several candidates get a progress line on stderr (on a terminal, not with
``--json``). Several candidates end with a summary line (``{"summary": {...}}``);
a single candidate's JSON object is the last line. Ctrl-C stops at once: running candidates are killed, the
verdicts already printed stand, and stderr says which files were not judged. A file that cannot be read (not
UTF-8) is that file's error, not the batch's. On a CPU, tasks too big for Triton's interpreter are judged at
reduced shapes (flag ``reduced_shapes``; ``--full-size`` turns that off; see ``tritonrl.verify.parent.plan``).
Exit status: 0 every candidate correct, 1 at least one not correct (a declined verdict, ``"correct": null``: the
task cannot be judged on this device, is not correct either), 2 bad usage or an unreadable task, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tritonrl.cli.tasks import TASK_HELP
from tritonrl.config import VerifyConfig
from tritonrl.errors import UserError
from tritonrl.tasks import get_task
from tritonrl.verify.shared.verdict import Stage, VerifyResult


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify", help="verify candidate Triton solutions of a task",
        description="Judge candidate ModelNew code against a task: static checks, compile, tiny run, multi-input "
                    "correctness, and GPU timing, in sandboxed child processes (see docs/verifier.md).",
        epilog="exit status: 0 every candidate correct, 1 some candidate not correct, 2 bad usage or unreadable "
               "task, 130 interrupted. With --json each candidate's JSON object is printed as it is judged (for "
               "one candidate, the last line); several end with a {\"summary\": ...} line.",
    )
    parser.add_argument("--task", required=True, help=TASK_HELP)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--solution", nargs="+", metavar="FILE", help="solution .py file(s) or a directory")
    source.add_argument("--completion", metavar="FILE", help="a model completion (code is extracted from it)")
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="per-candidate limit")
    parser.add_argument("--memory-gb", type=float, default=None, metavar="GB",
                        help="address-space cap per candidate process on the CPU (default 16; 0: no cap)")
    parser.add_argument("--full-size", action="store_true",
                        help="CPU: run full trials at the task's own sizes, not reduced to the CPU budget")
    parser.add_argument("--tolerance", choices=("strict", "kernelbench"), default="strict",
                        help="strict (default): fp32 outputs within 1e-4; kernelbench: KernelBench's 1e-2 "
                             "(docs/evaluation.md#tolerances)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=True,
                      help="no high-level torch compute in forward (default)")
    mode.add_argument("--permissive", dest="strict", action="store_false", help="skip the strict-only checks")
    parser.add_argument("--json", action="store_true", help="print one JSON object per candidate")
    parser.set_defaults(func=cmd_verify)


def read_solution(path: Path, empty_ok: bool = False) -> tuple[str | None, str | None]:
    """(text, None), or (None, a one-line reason) for a file that cannot be read, is not UTF-8 or (unless
    ``empty_ok``: a model's empty completion is its verdict) is empty."""
    try:
        text = path.read_text(encoding="utf-8")
        return (text, None) if text.strip() or empty_ok else (None, f"{path} is empty: no code to judge")
    except UnicodeDecodeError as exc:
        return None, f"cannot read {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror}"


def _solution_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for text in paths:
        path = Path(text).expanduser()
        if path.is_dir():
            found = sorted(path.glob("*.py"))
            if not found:
                raise UserError(f"{path}: no .py files in this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"no such solution file or directory: {text}")
    return files


def verify_config(args: argparse.Namespace) -> VerifyConfig:
    config = VerifyConfig(device=args.device, strict=args.strict, tolerance=args.tolerance)
    if args.timeout is not None:
        if args.timeout <= 0:
            raise UserError("--timeout must be positive")
        config.timeout_s = args.timeout
    if args.memory_gb is not None:
        if args.memory_gb < 0:
            raise UserError("--memory-gb must be 0 (no cap) or positive")
        config.sandbox_memory_gb = args.memory_gb or None
    if args.full_size:
        config.cpu_max_numel = config.cpu_max_flops = None
    return config


def cmd_verify(args: argparse.Namespace) -> int:
    from tritonrl.util.progress import ProgressLine
    from tritonrl.verify.parent.screen import screen

    task = get_task(args.task)
    config = verify_config(args)
    files = [Path(args.completion)] if args.completion else _solution_files(args.solution)
    texts = [read_solution(path, empty_ok=bool(args.completion)) for path in files]
    if args.completion and texts[0][0] is None:
        raise UserError(texts[0][1])
    results: dict[int, VerifyResult] = {}
    shown = None if len(files) > 1 and not args.json else False  # one progress line over every file, on a terminal
    with ProgressLine(len(files), "verify", enabled=shown) as line:
        for i, (_, error) in enumerate(texts):
            if error is not None:  # this file's error, not the batch's
                results[i] = _emit_counted(args, files[i], task.name, VerifyResult(Stage.EXTRACT, error=error,
                                                                                    reward=0.0), line)
        unreadable = len(results)
        codes: dict[int, str] = {}  # what goes on to run
        try:  # extraction and static checks first, here: a rejection costs no verifier start (nor torch's import)
            for i, (text, _) in enumerate(texts):
                if text is None:
                    continue
                start = time.monotonic()
                code, rejected = screen(config, completion=text) if args.completion else screen(config, code=text)
                if rejected is None:
                    codes[i] = code
                    continue
                rejected.elapsed_s = round(time.monotonic() - start, 3)
                results[i] = _emit_counted(args, files[i], task.name, rejected, line)
        except KeyboardInterrupt:
            line.close()
            _summary(args, files, results, unreadable, interrupted=True)
            return 130
        interrupted = bool(codes) and _run(args, task, config, files, codes, results, line)
    _summary(args, files, results, unreadable, interrupted=interrupted)
    return 130 if interrupted else 0 if all(r.correct for r in results.values()) else 1


def _run(args: argparse.Namespace, task, config: VerifyConfig, files: list[Path], codes: dict[int, str],
         results: dict[int, VerifyResult], line) -> bool:
    """The candidates that passed the static checks, through the verifier: each verdict printed as it lands.
    True when Ctrl-C stopped it (the running candidates are killed at once)."""
    from tritonrl.verify import Verifier, VerifyItem

    order = list(codes)
    with Verifier(config) as verifier:
        verifier.start()  # the zygote and the judge start while this process imports torch for the plan
        from tritonrl.verify.parent.plan import cpu_oversize, mark_cpu_size_limit

        stream = None
        try:
            oversize = cpu_oversize(task, config, verifier.device)
            stream = verifier.verify_iter([VerifyItem(task, code=codes[i]) for i in order])
            for k, result in stream:
                # counted before printed: a Ctrl-C between the two loses nothing
                results[order[k]] = result = mark_cpu_size_limit(result, oversize)
                _emit_counted(args, files[order[k]], task.name, result, line)
        except KeyboardInterrupt:
            if stream is not None:
                stream.close()
            verifier.close()  # kills the running candidates' process groups now, not at their timeout
            line.close()
            return True
    return False


def _emit_counted(args: argparse.Namespace, path: Path, task: str, result: VerifyResult, line) -> VerifyResult:
    """``_emit`` above the progress line, then the line moved on by one verdict."""
    with line.printing():
        _emit(args, path, task, result)
    line.update(result)
    return result


def _emit(args: argparse.Namespace, path: Path, task: str, result: VerifyResult) -> VerifyResult:
    if result.reward is None:  # the verdict's reward, by the function training uses (default reward config)
        from tritonrl.common.reward import compute_reward

        result.reward = compute_reward(result)
    if args.json:
        print(json.dumps({"file": str(path), "task": task, **result.to_dict()}), flush=True)
    else:
        _print_human(path, result)
    return result


def _summary(args: argparse.Namespace, files: list[Path], results: dict[int, VerifyResult], unreadable: int,
             interrupted: bool) -> None:
    """The last stdout line for several candidates; on an interrupt, stderr also names what was not judged."""
    missing = [str(files[i]) for i in range(len(files)) if i not in results]
    if interrupted:
        print(f"tritonrl: interrupted: {len(results)} of {len(files)} verdicts printed above (stdout); "
              f"not judged: {', '.join(missing) or 'none'}", file=sys.stderr)
    if len(files) < 2:
        return
    summary = {"candidates": len(files), "judged": len(results),
               "correct": sum(bool(r.correct) for r in results.values()),
               "declined": sum(r.declined is not None for r in results.values()), "unreadable": unreadable,
               "interrupted": interrupted, "not_judged": missing}
    if args.json:
        print(json.dumps({"summary": summary}), flush=True)
    else:
        print(f"summary: {summary['correct']} of {summary['candidates']} correct"
              + (f", {summary['declined']} declined (not judged on this device)" if summary["declined"] else "")
              + (f", {len(missing)} not judged (interrupted)" if interrupted else ""), flush=True)


def _print_human(path: Path, result) -> None:
    verdict = "DECLINED" if result.declined else "CORRECT" if result.correct else "REJECTED"
    speed = f" speedup {result.speedup:.2f}x" if result.speedup is not None else ""
    flags = f" [{', '.join(result.flags)}]" if result.flags else ""
    print(f"{verdict} {path}: stage {result.stage.value}{speed}{flags} reward {result.reward:.2f}", flush=True)
    if result.error or result.declined:
        for line in (result.error or result.declined).splitlines():
            print(f"    {line}", flush=True)
