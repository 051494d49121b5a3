"""Tasks: PyTorch programs (KernelBench format) to be rewritten with Triton kernels.

    from tritonrl.tasks import load_tasks, get_task
    load_tasks("bundled", level=2)          # the bundled suite
    load_tasks("~/KernelBench")             # a KernelBench clone (or its KernelBench/ subdirectory)
    load_tasks("kernelbook.jsonl")          # KernelBook rows (filtered; see tritonrl.tasks.kernelbook)
    load_tasks("data/gen/train")            # a dir in the bundled layout (level*/, solutions/): with references
    get_task("l1_softmax")                  # a bundled task by name, or get_task("path/to/task.py")
    select_tasks("~/KernelBench", level=2, max_tasks=5)   # what eval and the pipeline judge (eval.tasks)

Shape variants live in ``tritonrl.tasks.variants``, difficulty labels in ``tritonrl.tasks.levels``, generated
tasks (op-combination train/held-out splits, verified references) come from ``tritonrl.taskgen``, a layer above
(it verifies references, so it sits above the verifier that this package serves).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from tritonrl.errors import TaskError
from tritonrl.tasks.model import KernelTask
from tritonrl.tasks.sources import (
    find_kernelbench_root,
    load_bundled,
    load_kernelbench,
    load_task_file,
    natural_key,
)

__all__ = ["KernelTask", "get_task", "load_tasks", "load_tasks_with_report", "select_tasks"]

KERNELBOOK_SUFFIXES = (".jsonl", ".parquet")
KERNELBOOK_HUB_ID = "GPUMODE/KernelBook"


def load_tasks(source: str | Path, level: int | None = None,
               kernelbench_dir: str | Path | None = None) -> list[KernelTask]:
    """Tasks from ``"bundled"``, a KernelBench dir, a KernelBook ``.jsonl``/``.parquet`` (or the hub id), or a ``.py``.

    KernelBook rows that match a KernelBench task are dropped (decontamination) when ``kernelbench_dir`` is given,
    or else when the ``KERNELBENCH_DIR`` environment variable names a clone.
    """
    return load_tasks_with_report(source, level, kernelbench_dir)[0]


def load_tasks_with_report(source: str | Path, level: int | None = None,
                           kernelbench_dir: str | Path | None = None):
    """``load_tasks`` plus KernelBook's ``FilterReport`` (what each filter dropped); None for other sources."""
    source_str = str(source)
    if source_str == "bundled":
        return load_bundled(level), None
    path = Path(source_str).expanduser()
    report = None
    if path.suffix in KERNELBOOK_SUFFIXES or source_str == KERNELBOOK_HUB_ID:
        if path.suffix and not path.is_file():
            raise TaskError(f"no such KernelBook file: {path}")
        from tritonrl.tasks.kernelbook import load_kernelbook

        tasks, report = load_kernelbook(source_str, kernelbench_dir=decontamination_dir(kernelbench_dir))
    elif path.is_dir():
        root = find_kernelbench_root(path)
        if root is not None and (root / "solutions").is_dir():  # bundled layout (tritonrl tasks generate)
            return load_bundled(level, root=root), None
        return load_kernelbench(path, level), None
    elif path.suffix == ".py":
        tasks = [load_task_file(path)]
    elif path.exists():
        raise TaskError(f"{path}: not a task source (expected a directory, .py, .jsonl or .parquet)")
    else:
        raise TaskError(f"no such task source: {source_str} "
                        "(expected 'bundled', a KernelBench dir, a .jsonl/.parquet file or a .py file)")
    return [t for t in tasks if level is None or t.level == level], report


def select_tasks(spec: str, level: int | None = None, max_tasks: int | None = None) -> list[KernelTask]:
    """``bundled``, a KernelBench dir or task file, or comma-separated task names; then level and count
    (``eval.tasks``, ``eval.level``, ``eval.max_tasks``).

    Ordered by level, then by name with numbers by value (KernelBench's ``2_...`` before ``10_...``)."""
    if spec == "bundled" or Path(spec).expanduser().exists():
        tasks = load_tasks(spec, level)
    elif os.sep in spec or spec.startswith(("~", ".")) or spec.endswith(".py"):
        raise TaskError(f"no such directory or task file: {spec} (tasks are 'bundled', a KernelBench directory, "
                        "a .py task file, or task names separated by commas)")
    else:
        tasks = [get_task(name.strip()) for name in spec.split(",") if name.strip()]
        tasks = [t for t in tasks if level is None or t.level == level]
    tasks = sorted(tasks, key=lambda t: (t.level, natural_key(t.name)))[:max_tasks]
    if not tasks:
        raise TaskError(f"no tasks selected by {spec!r}" + (f" at level {level}" if level else ""))
    return tasks


def decontamination_dir(kernelbench_dir: str | Path | None = None) -> str | None:
    """The KernelBench clone to decontaminate against: the argument, else ``$KERNELBENCH_DIR``, else none."""
    chosen = kernelbench_dir or os.environ.get("KERNELBENCH_DIR")
    if chosen and not find_kernelbench_root(chosen):
        raise TaskError(f"not a KernelBench clone (no level1/, level2/ ...): {chosen}")
    return str(chosen) if chosen else None


def get_task(name_or_path: str | Path) -> KernelTask:
    """A task by bundled name (or KernelBench name when ``KERNELBENCH_DIR`` is set), or by ``.py`` path."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.suffix == ".py" or os.sep in text:
        return load_task_file(path)
    candidates = {t.name: t for t in load_bundled()}
    kernelbench_dir = os.environ.get("KERNELBENCH_DIR")
    if kernelbench_dir and find_kernelbench_root(kernelbench_dir):
        candidates.update({t.name: t for t in load_kernelbench(kernelbench_dir) if t.name not in candidates})
    if text in candidates:
        return candidates[text]
    close = difflib.get_close_matches(text, list(candidates), n=3, cutoff=0.5)
    guess = f" (did you mean {', '.join(close)}?)" if close else ""
    raise TaskError(f"unknown task: {text}{guess}; {_where_tasks_are(kernelbench_dir)}")


def _where_tasks_are(kernelbench_dir: str | None) -> str:
    """Where a task name is looked up, and how to point at a KernelBench clone (``unknown task`` messages)."""
    if kernelbench_dir and find_kernelbench_root(kernelbench_dir):
        return (f"not in the bundled suite nor in KERNELBENCH_DIR={kernelbench_dir}; `tritonrl tasks list "
                f"{kernelbench_dir}` lists its problems, or give a task file's path")
    clone = f"KERNELBENCH_DIR={kernelbench_dir} is not a KernelBench clone (no level1/, level2/ ...); " \
        if kernelbench_dir else ""
    return (f"{clone}not a bundled task (`tritonrl tasks list bundled`); for a KernelBench problem set "
            "KERNELBENCH_DIR=path/to/KernelBench (with eval, or pass --tasks path/to/KernelBench), or give the "
            "task file's path")
