"""``tritonrl verify``: judge candidate solutions of one task with the full verifier funnel.

    tritonrl verify --task l1_relu --solution my_relu.py            # one file; exit 0 if correct
    tritonrl verify --task l1_relu --completion model_output.txt    # a raw model completion
    tritonrl verify --task task.py --solution cands/ --json         # a directory, in parallel; JSON lines

With ``--json`` every candidate prints one JSON object on its own line (the last line for a single candidate).
Exit status: 0 every candidate correct, 1 at least one not correct, 2 bad usage or an unreadable task/file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tritonrl.config import VerifyConfig
from tritonrl.errors import UserError
from tritonrl.tasks import get_task


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "verify", help="verify candidate Triton solutions of a task",
        description="Judge candidate ModelNew code against a task: static checks, compile, tiny run, multi-input "
                    "correctness, and GPU timing, in sandboxed child processes (see docs/verifier.md).",
        epilog="exit status: 0 every candidate correct, 1 some candidate not correct, 2 bad usage or unreadable "
               "task. With --json the last line of stdout is a JSON object (one line per candidate).",
    )
    parser.add_argument("--task", required=True, help="bundled task name or path to a .py task file")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--solution", nargs="+", metavar="FILE", help="solution .py file(s) or a directory")
    source.add_argument("--completion", metavar="FILE", help="a model completion (code is extracted from it)")
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="per-candidate limit")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--strict", dest="strict", action="store_true", default=True,
                      help="no high-level torch compute in forward (default)")
    mode.add_argument("--permissive", dest="strict", action="store_false", help="skip the strict-only checks")
    parser.add_argument("--json", action="store_true", help="print one JSON object per candidate")
    parser.set_defaults(func=cmd_verify)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from exc


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


def cmd_verify(args: argparse.Namespace) -> int:
    from tritonrl.verify import Verifier, VerifyItem

    task = get_task(args.task)
    config = VerifyConfig(device=args.device, strict=args.strict)
    if args.timeout is not None:
        if args.timeout <= 0:
            raise UserError("--timeout must be positive")
        config.timeout_s = args.timeout
    if args.completion:
        files = [Path(args.completion)]
        items = [VerifyItem(task, completion=_read(files[0]))]
    else:
        files = _solution_files(args.solution)
        items = [VerifyItem(task, code=_read(path)) for path in files]
    with Verifier(config) as verifier:
        results = verifier.verify_many(items, progress=len(items) > 1 and not args.json)
    for path, result in zip(files, results):
        if args.json:
            print(json.dumps({"file": str(path), "task": task.name, **result.to_dict()}))
        else:
            _print_human(path, result)
    return 0 if all(r.correct for r in results) else 1


def _print_human(path: Path, result) -> None:
    verdict = "CORRECT" if result.correct else "REJECTED"
    speed = f" speedup {result.speedup:.2f}x" if result.speedup is not None else ""
    flags = f" [{', '.join(result.flags)}]" if result.flags else ""
    print(f"{verdict} {path}: stage {result.stage.value}{speed}{flags} reward {result.reward:.2f}")
    if result.error:
        for line in result.error.splitlines():
            print(f"    {line}")
