"""Training data: tasks from the configured sources, as TRL datasets.

* SFT rows (conversational prompt/completion, loss on the completion only):
  ``{"prompt": build_messages(task), "completion": [{"role": "assistant", "content": "```python\\n...```"}]}``
* RL rows: ``{"prompt": build_messages(task), "task_key": task.key, "level": task.level}``; the reward
  function looks the task up by ``task_key`` (TRL passes extra dataset columns to reward functions).
"""

from __future__ import annotations

from tritonrl.common.prompts import build_messages, load_template
from tritonrl.config import DataConfig
from tritonrl.errors import ConfigError
from tritonrl.tasks import KernelTask, load_tasks


def load_training_tasks(data: DataConfig, sources: list[str] | None = None) -> list[KernelTask]:
    """Tasks from ``sources`` (default ``data.source``) at ``data.levels``, named in ``data.tasks`` if given,
    less ``data.exclude_tasks`` (the held-out evaluation set), at most ``data.max_tasks``."""
    tasks: list[KernelTask] = []
    for source in sources or [data.source]:
        tasks.extend(t for t in load_tasks(source, kernelbench_dir=data.kernelbench_dir) if t.level in data.levels)
    if data.tasks is not None:
        missing = sorted(set(data.tasks) - {t.name for t in tasks})
        if missing:
            raise ConfigError(f"data.tasks names {', '.join(missing)}, not found at levels {data.levels} "
                              f"in {sources or [data.source]}")
        tasks = [t for t in tasks if t.name in set(data.tasks)]
    excluded = set(data.exclude_tasks)
    tasks = [t for t in tasks if t.name not in excluded]
    if data.max_tasks is not None:
        tasks = tasks[: data.max_tasks]
    if not tasks:
        raise ConfigError(f"no tasks at levels {data.levels} in {sources or [data.source]}")
    return tasks


def solution_message(solution: str) -> dict[str, str]:
    return {"role": "assistant", "content": f"```python\n{solution.strip()}\n```"}


def sft_rows(tasks: list[KernelTask], template_path: str | None = None) -> list[dict]:
    """(prompt, completion) pairs for every task that has a known-good solution."""
    template = load_template(template_path)
    return [
        {"prompt": build_messages(t, template), "completion": [solution_message(t.solution)], "task_key": t.key}
        for t in tasks if t.solution
    ]


def rl_rows(tasks: list[KernelTask], template_path: str | None = None) -> list[dict]:
    template = load_template(template_path)
    return [{"prompt": build_messages(t, template), "task_key": t.key, "level": t.level} for t in tasks]


def to_dataset(rows: list[dict]):
    from datasets import Dataset

    if not rows:
        raise ConfigError("no training rows (for SFT: no task in the sources has a solution)")
    return Dataset.from_list(rows)
