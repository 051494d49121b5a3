"""The commit of this checkout, for results that say which code made them (benchmarks, studies).

    from tritonrl.util.gitinfo import commit
    commit()              # "1cf3e5f0..." (``+dirty`` with uncommitted changes to tracked files), or None
    commit(short=True)    # "1cf3e5f"

``TRITONRL_COMMIT`` in the environment wins: a device's copy of the tree has no ``.git`` (the caller names the
commit it copied). None where neither is known (no git, not a checkout).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def commit(short: bool = False, root: str | Path = HERE) -> str | None:
    if os.environ.get("TRITONRL_COMMIT"):
        return os.environ["TRITONRL_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", *(["--short"] if short else []), "HEAD"],
                              capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None
