"""Task loaders: the bundled suite, a KernelBench clone, and single task files.

    from tritonrl.tasks.sources import load_bundled, load_kernelbench, load_task_file
    load_kernelbench("~/KernelBench", level=2)   # 100 tasks, named like "12_Gemm_Multiply_LeakyReLU"

KernelBook files live in ``tritonrl.tasks.kernelbook``; ``tritonrl.tasks.load_tasks`` picks the loader.
Every loader checks a task file's shape (parses; defines ``Model``, ``get_inputs``, ``get_init_inputs``) and
raises ``TaskError`` with one line naming the file otherwise.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from tritonrl.errors import TaskError
from tritonrl.tasks.levels import classify_level
from tritonrl.tasks.model import KernelTask
from tritonrl.util.astlock import parse_source

BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
_LEVEL_DIR = re.compile(r"^level(\d+)$")


def check_task_source(source: str, where: str) -> None:
    """Raise ``TaskError`` unless ``source`` parses and defines Model, get_inputs and get_init_inputs."""
    try:
        tree = parse_source(source)
    except SyntaxError as exc:
        raise TaskError(f"{where}: syntax error on line {exc.lineno}: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [name for name in REQUIRED_NAMES if name not in defined]
    if missing:
        raise TaskError(f"{where}: not a task file (missing {', '.join(missing)})")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"cannot read {path}: {exc}") from None


def load_task_file(path: str | Path) -> KernelTask:
    """One KernelBench-format ``.py`` file; its level is read from the code."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise TaskError(f"no such task file: {path}")
    source = _read(path)
    check_task_source(source, str(path))
    return KernelTask(name=path.stem, level=classify_level(source), source=source, origin="file", path=str(path))


@lru_cache(maxsize=4)
def _bundled(root: Path) -> tuple[KernelTask, ...]:
    tasks = []
    for level, level_dir in _level_dirs(root):
        for path in sorted(level_dir.glob("*.py")):
            source = _read(path)
            check_task_source(source, str(path))
            solution_path = root / "solutions" / path.name
            solution = _read(solution_path) if solution_path.is_file() else None
            tasks.append(KernelTask(name=path.stem, level=level, source=source, origin="bundled",
                                    path=str(path), solution=solution))
    return tuple(tasks)


def load_bundled(level: int | None = None, root: Path = BUNDLED_DIR) -> list[KernelTask]:
    """The bundled suite (``tasks/bundled/level*/``), with reference solutions from ``bundled/solutions/``."""
    return [t for t in _bundled(root) if level is None or t.level == level]


def find_kernelbench_root(path: str | Path) -> Path | None:
    """The directory holding ``level1/``, ``level2/``...: ``path`` itself or ``path/KernelBench``."""
    path = Path(path).expanduser()
    for candidate in (path, path / "KernelBench"):
        if candidate.is_dir() and _level_dirs(candidate):
            return candidate
    return None


def load_kernelbench(path: str | Path, level: int | None = None) -> list[KernelTask]:
    """Tasks of a KernelBench clone: name = file stem, level = directory, sorted by the leading number."""
    root = find_kernelbench_root(path)
    if root is None:
        raise TaskError(f"{path}: not a KernelBench directory (no level1/, level2/... inside it or in KernelBench/)")
    tasks = []
    for dir_level, level_dir in _level_dirs(root):
        if level is not None and dir_level != level:
            continue
        for file in sorted(level_dir.glob("*.py"), key=_problem_order):
            source = _read(file)
            check_task_source(source, str(file))
            tasks.append(KernelTask(name=file.stem, level=dir_level, source=source, origin="kernelbench",
                                    path=str(file)))
    return tasks


def _level_dirs(root: Path) -> list[tuple[int, Path]]:
    found = []
    for child in root.iterdir() if root.is_dir() else ():
        match = _LEVEL_DIR.match(child.name)
        if match and child.is_dir():
            found.append((int(match.group(1)), child))
    return sorted(found)


def _problem_order(path: Path) -> tuple[int, str]:
    """KernelBench files start with their problem number ("12_Gemm..."); sort 2 before 10."""
    match = re.match(r"(\d+)", path.stem)
    return (int(match.group(1)) if match else 1 << 30, path.stem)


def natural_key(name: str) -> list:
    """Sort key that orders numbers by value: ``2_Relu`` before ``10_Gemm`` before ``100_Conv``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


_SOLUTION_STEM = re.compile(r"^(?:level(\d+)_)?(\d+)(?:_|$)")


def match_problem(stem: str, tasks: list[KernelTask], selected_level: int | None = None) -> KernelTask:
    """The task a solution file is for, by its stem: the task's exact name (``12_Gemm_Multiply_LeakyReLU``),
    else its problem number (``12``, ``12_mine``), optionally with its level (``level2_12``, ``level2_12_v2``).
    A bare number found in several levels is taken at ``selected_level`` (``--level``) when given. ``TaskError``
    when nothing matches, or when a bare number is ambiguous across levels."""
    exact = [t for t in tasks if t.name == stem]
    if exact:
        return next((t for t in exact if t.level == selected_level), exact[0])
    match = _SOLUTION_STEM.match(stem)
    if match is None:
        raise TaskError(f"{stem}: a solution file is named after its task: NAME.py, NUMBER.py or levelL_NUMBER.py")
    level, number = match.group(1), int(match.group(2))
    found = [t for t in tasks if re.match(rf"{number}(?:_|$)", t.name) and (level is None or t.level == int(level))]
    if len(found) > 1 and selected_level is not None:
        found = [t for t in found if t.level == selected_level] or found
    if len(found) == 1:
        return found[0]
    if not found:
        where = f" at level {level}" if level else ""
        raise TaskError(f"{stem}: no problem {number}{where} among the {len(tasks)} tasks selected")
    levels = ", ".join(f"level{t.level}_{number}" for t in found)
    pick = " (or pass --level)" if selected_level is None else f", none at level {selected_level}"
    raise TaskError(f"{stem}: problem {number} is in several levels{pick}; name the file {levels}")
