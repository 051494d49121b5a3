"""What the static checks read from the installed torch, triton and numpy, remembered across processes.

    from tritonrl.verify.static.facts import remembered, save
    methods = remembered("tensor_methods", "", lambda: sorted(...))   # computed once per installed versions
    save()                                                             # new answers to the file (run_static_checks)

The checks ask the real modules a few things: torch.Tensor's public methods (and which of them are routines),
whether ``torch.a.b`` is a compute function, what an attribute chain on an allowed module names. Answering
imports torch, which costs seconds, more than every check together, and would make each ``tritonrl verify`` of
a rejected kernel pay for it. So each answer about torch, triton or numpy is kept in a file named by the
installed modules (the path, size and modification time of their ``__init__.py``) and Python's version: a
later process answers from it and imports torch only for a question it has not seen. Same modules, same answers.
The file is the user's own (``$XDG_CACHE_HOME/tritonrl/static-facts/``, else ``~/.cache/...``), as Triton's
kernel cache is; candidates never run where they could write it. ``TRITONRL_STATIC_FACTS=0`` keeps nothing
(every answer read from the modules), and a file that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritonrl.util.atomic import write_atomic

FORMAT = 1  # the answers' format: a new one starts a new file
MODULES = ("torch", "triton", "numpy")  # the modules whose answers are kept (the standard library's are cheap)
MAX_ANSWERS = 20_000  # a file this full takes no more (RL samples invent names): ~2 MB, read once per process

_lock = threading.Lock()
_answers: dict[str, Any] | None = None
_new: dict[str, Any] = {}


def remembered(kind: str, key: str, compute: Callable[[], Any]) -> Any:
    """The answer to question ``kind:key``: from the file when it holds it, else ``compute()`` (which may import
    the modules), kept for ``save``. Answers must be JSON values (a list, not a set)."""
    name = f"{kind}:{key}"
    with _lock:
        answers = _loaded()
        if name in answers:
            return answers[name]
    value = compute()
    with _lock:
        answers[name] = _new[name] = value
    return value


def save() -> None:
    """Add this process's new answers to the file (merged with what other processes wrote meanwhile)."""
    with _lock:
        new = dict(_new)
        _new.clear()
    path = facts_file() if new else None
    if path is None:
        return
    kept = _read(path)
    if len(kept) >= MAX_ANSWERS:
        return
    try:
        write_atomic(path, json.dumps({**kept, **new}, sort_keys=True))
    except OSError:
        pass  # a cache: answers are read from the modules next time


def facts_file() -> Path | None:
    """The file for the installed modules and this Python, or None when turned off or nowhere to keep it."""
    if os.environ.get("TRITONRL_STATIC_FACTS") == "0":
        return None
    stamp = [FORMAT, sys.version, sys.executable]
    for name in MODULES:
        spec = importlib.util.find_spec(name) if name not in sys.modules else sys.modules[name].__spec__
        origin = getattr(spec, "origin", None)
        try:
            stat = os.stat(origin) if origin else None
        except OSError:
            stat = None
        stamp.append([name, origin, stat and stat.st_size, stat and stat.st_mtime_ns])
    digest = hashlib.sha256(json.dumps(stamp).encode()).hexdigest()[:24]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "tritonrl", "static-facts", f"{digest}.json")


def _loaded() -> dict[str, Any]:
    global _answers
    if _answers is None:
        path = facts_file()
        _answers = _read(path) if path is not None else {}
    return _answers


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def forget() -> None:
    """Drop what this process loaded (tests: the next question reads the file again)."""
    global _answers
    with _lock:
        _answers = None
        _new.clear()
