"""Reading JSON-lines files written by users or by us, with errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tritonrl.errors import UserError


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; a malformed line is a one-line ``UserError``."""
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
