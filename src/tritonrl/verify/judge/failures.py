"""How a session with a candidate's child ends early: the child died, fell silent, or failed a step, or the parent
ended it before its trials."""

from __future__ import annotations

from typing import Any


class ChildGone(Exception):
    """The child closed its socket: it died (or exited) during ``stage``."""


class ChildSilent(Exception):
    """The child did not answer within its time budget during ``stage``."""


class Failed(Exception):
    """The candidate failed ``stage`` with ``flag`` and ``error`` (the verdict is decided)."""

    def __init__(self, stage: str, flag: str | None, error: str) -> None:
        super().__init__(error)
        self.stage, self.flag, self.error = stage, flag, error


def text(value: Any, default: str) -> str:
    """A string the child sent, bounded; ``default`` for anything else."""
    return value[:2000] if isinstance(value, str) else default


def number(value: Any) -> float:
    """A number the child sent; 0.0 for anything else."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


class Unplanned(Exception):
    """The parent ended the session before sending its trials (its plan failed, or it is gone)."""
