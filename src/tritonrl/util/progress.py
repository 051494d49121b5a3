"""A progress line while many candidates are judged: done/total, correct so far, time left (tqdm, on stderr).

    with ProgressLine(len(items), "eval") as line:        # shown only when stderr is a terminal
        for index, result in verifier.verify_iter(items):
            with line.printing():                           # lines printed meanwhile go above the bar
                print(verdict_line(result))
            line.update(result)

``tritonrl eval`` shows one while it judges (each refinement turn its own), ``tritonrl verify`` with several
candidates one too, unless ``--json``. Nothing is drawn when stderr is not a terminal (a log file, CI, a pipe), so
logs stay clean. ``Verifier.verify_many(items, progress=True)`` (local or Ray) draws the same line wherever asked.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

# Flag.VERIFIER_ERROR's value (util/ lies below the verifier; tests/util/test_progress.py keeps them one)
VERIFIER_ERROR = "verifier_error"
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt}{postfix} [{elapsed}<{remaining}]"


@dataclass
class Display:
    """What a user sees while samples are judged (``tritonrl eval``): ``verdict`` is called with each sample's
    ``results.jsonl`` row as it lands (printing it above the progress line); ``progress`` shows the progress line
    (None: when stderr is a terminal; False: never, as with ``--json``)."""

    verdict: Callable[[dict[str, Any]], None] | None = None
    progress: bool | None = None


class ProgressLine:
    """A tqdm bar over ``total`` candidates whose postfix counts the correct ones (and verifier errors, if any).

    ``enabled``: None shows it when ``stream`` (default stderr) is a terminal; False never."""

    def __init__(self, total: int, desc: str, enabled: bool | None = None, stream: TextIO | None = None) -> None:
        from tqdm import tqdm

        self.stream = stream or sys.stderr
        show = bool(total) and (enabled if enabled is not None else _is_terminal(self.stream))
        self.correct = self.verifier_errors = self.declined = 0
        sized = _width(self.stream) > 0  # a terminal that does not say its size gets 100x20, not 0x0 (no line)
        self.bar = tqdm(total=total, desc=desc, unit="cand", file=self.stream, disable=not show, postfix="0 correct",
                        bar_format=BAR_FORMAT, dynamic_ncols=sized, ncols=None if sized else 100,
                        nrows=None if sized else 20, mininterval=0.5)

    def update(self, result: Any) -> None:
        """One more candidate judged (a ``VerifyResult``)."""
        self.correct += bool(result.correct)
        self.verifier_errors += VERIFIER_ERROR in result.flags
        self.declined += getattr(result, "declined", None) is not None  # neither correct nor wrong
        self._postfix()
        self.bar.update(1)

    def printing(self):
        """A context in which printed lines appear above the bar instead of through it."""
        return self.bar.external_write_mode(file=sys.stdout) if not self.bar.disable else contextlib.nullcontext()

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _postfix(self) -> None:
        errors = f", {self.verifier_errors} verifier errors" if self.verifier_errors else ""
        declined = f", {self.declined} declined" if self.declined else ""
        self.bar.set_postfix_str(f"{self.correct} correct{declined}{errors}", refresh=False)


def _width(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())
