"""The ``tritonrl`` command: parses arguments and hands each subcommand to its module.

Each module in this package defines ``register(subparsers)``, which adds its subcommands and sets
``func`` on their parsers to a function ``(args) -> int`` (the exit status). Errors the user can fix
(``tritonrl.errors.UserError``) print one line and exit 2; anything else is a bug and keeps its traceback. A job
stopped by SIGTERM/SIGINT at a safe point (``tritonrl.errors.Stopped``: eval, tasks generate) says in one line
what it kept and exits 143 for SIGTERM, 130 for Ctrl-C (``tritonrl.common.signals.exit_status``), as a training
stage does; Ctrl-C that is not caught so (a second one) exits 130.

``run`` is the program (``tritonrl``, ``python -m tritonrl``): ``main`` on the process's arguments, then out. It
adds what only a whole process may do: a closed pipe (``tritonrl tasks list ... | head``) ends it quietly (exit
141, as SIGPIPE would), and an exit on Ctrl-C skips the interpreter's teardown (torch and Triton take about a
second there, which a second Ctrl-C should not wait for; everything was written and closed before).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys

from tritonrl import __version__
from tritonrl.cli import known_warnings
from tritonrl.cli.parser import Parser
from tritonrl.common.signals import EXIT_INTERRUPTED, exit_status
from tritonrl.errors import Interrupted, Stopped, UserError

EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: whoever read stdout stopped reading (`| head`)

# Subcommand modules, in the order --help lists them. A module that cannot be imported (for instance
# because the `train` extra is missing) still lets the others work.
COMMAND_MODULES = ("tasks", "verify", "train", "evaluate", "pipeline", "serve", "config")


def build_parser() -> Parser:
    parser = Parser(  # every subcommand's parser too: no abbreviations, a typo named in one line
        prog="tritonrl",
        description="Train language models to write correct, fast Triton kernels, and judge them strictly.",
    )
    parser.add_argument("--version", action="version", version=f"tritonrl {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"tritonrl.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    known_warnings.install()  # known, harmless library warnings (each named there), once per process
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for a resume command
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except Stopped as exc:
        print(f"tritonrl: {exc}", file=sys.stderr)
        return exit_status(exc.reason)
    except UserError as exc:
        print(f"tritonrl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # an Interrupted says what was kept and how to resume
        print(f"tritonrl: {exc if isinstance(exc, Interrupted) else 'interrupted'}", file=sys.stderr)
        return EXIT_INTERRUPTED


def run() -> None:
    """The ``tritonrl`` program: ``main`` on this process's arguments, then exit with its status."""
    try:
        code = main()
        sys.stdout.flush()  # here, not at teardown: a pipe closed by now is a closed pipe, not a traceback
    except BrokenPipeError:
        code = _closed_pipe()
    from tritonrl.common import ranks

    ranks.shutdown(clean=code == 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a Ctrl-C during the teardown ends it, without a traceback
    if code in (EXIT_INTERRUPTED, EXIT_CLOSED_PIPE):
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _closed_pipe() -> int:
    """stdout's reader is gone: later writes (the interpreter's last flush too) go nowhere instead of failing."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":
    run()
