"""Reward adapters around the one verifier: TRL reward functions and verl's ``compute_score``.

TRL (GRPO, RLOO) calls ``VerifierReward(prompts=..., completions=..., task_key=[...], log_metric=..., ...)``
once per generation batch; all completions go to ONE ``Verifier.verify_many`` call so the verifier can run
them in parallel. Rewards come from ``tritonrl.reward.compute_reward``, the same function evaluation uses.
Per-batch metrics (format/compile/correct rates, mean speedup and the mean lower end of its 95% interval, the
share surely faster than the reference) go through TRL's ``log_metric`` hook, and the batch's Level-1
correctness updates the curriculum.

verl: point ``custom_reward_function.path`` at this file and ``name`` at ``compute_score``; ``ground_truth``
is the task's source (or a bundled task name), ``extra_info`` may hold ``{"task": KernelTask.to_dict()}``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.reward import compute_reward, speedup_interval
from tritonrl.tasks.model import KernelTask


@dataclass
class BatchStats:
    """What one reward batch looked like; the speedup numbers are None when nothing was timed (CPU).

    ``mean_speedup`` is the mean point speedup of correct samples, ``mean_speedup_ci95_low`` the mean lower end
    of their 95% intervals (what the reward credits), ``surely_faster_rate`` the share of the batch that is
    correct with an interval entirely above 1 (the only samples that earn speed credit).
    """

    n: int
    format_rate: float
    compile_rate: float
    correct_rate: float
    mean_reward: float
    mean_speedup: float | None
    mean_speedup_ci95_low: float | None = None
    surely_faster_rate: float | None = None

    def as_metrics(self) -> dict[str, float]:
        metrics = {"verify/format_rate": self.format_rate, "verify/compile_rate": self.compile_rate,
                   "verify/correct_rate": self.correct_rate, "verify/mean_reward": self.mean_reward}
        optional = {"verify/mean_speedup": self.mean_speedup,
                    "verify/mean_speedup_ci95_low": self.mean_speedup_ci95_low,
                    "verify/surely_faster_rate": self.surely_faster_rate}
        metrics.update({name: value for name, value in optional.items() if value is not None})
        return metrics


def batch_stats(results: Sequence, rewards: Sequence[float]) -> BatchStats:
    n = max(1, len(results))
    speedups = [r.speedup for r in results if r.correct and r.speedup is not None]
    lows = [ci[0] for r in results if r.correct and (ci := speedup_interval(r)) is not None]
    return BatchStats(
        n=len(results),
        format_rate=sum(r.format_ok for r in results) / n,
        compile_rate=sum(r.compiled for r in results) / n,
        correct_rate=sum(r.correct for r in results) / n,
        mean_reward=sum(rewards) / n,
        mean_speedup=sum(speedups) / len(speedups) if speedups else None,
        mean_speedup_ci95_low=sum(lows) / len(lows) if lows else None,
        surely_faster_rate=sum(low > 1.0 for low in lows) / n if lows else None,
    )


class VerifierReward:
    """TRL reward function: ``(prompts, completions, task_key, **columns) -> list[float]``.

    tasks: ``task.key -> KernelTask`` for every task in the training dataset.
    verifier: anything with ``verify_many(list[VerifyItem]) -> list[VerifyResult]`` (default: a ``Verifier``).
    curriculum: updated with each batch's (level, correct) pairs, if given.
    """

    __name__ = "verifier_reward"  # TRL names the reward column after this

    def __init__(self, tasks: dict[str, KernelTask], verifier=None, verify_config: VerifyConfig | None = None,
                 reward_config: RewardConfig | None = None, curriculum=None,
                 on_batch: Callable[[BatchStats], None] | None = None):
        if verifier is None:
            from tritonrl.verify.backends import make_verifier

            verifier = make_verifier(verify_config or VerifyConfig())  # verify.backend: local or ray
        self.tasks = tasks
        self.verifier = verifier
        self.reward_config = reward_config or RewardConfig()
        self.curriculum = curriculum
        self.on_batch = on_batch
        self.last_stats: BatchStats | None = None
        self.history: list[BatchStats] = []

    def close(self) -> None:
        """Release the verifier's worker processes, if it has any."""
        close = getattr(self.verifier, "close", None)
        if close:
            close()

    def score(self, completions: Sequence, task_key: Sequence[str]) -> tuple[list[float], list]:
        """Verify every completion in one batch; (rewards, results)."""
        from tritonrl.verify import VerifyItem

        if task_key is None:
            raise ValueError("the training dataset needs a 'task_key' column for VerifierReward")

        items = [VerifyItem(self.tasks[key], completion=c) for key, c in zip(task_key, completions, strict=True)]
        results = self.verifier.verify_many(items)
        return [compute_reward(r, self.reward_config) for r in results], results

    def __call__(self, prompts=None, completions=None, task_key=None, log_metric=None, **columns) -> list[float]:
        rewards, results = self.score(completions, task_key)
        self._account(results, rewards, task_key, log_metric)
        return rewards

    def _account(self, results, rewards, task_key, log_metric) -> None:
        stats = batch_stats(results, rewards)
        self.last_stats = stats
        self.history.append(stats)
        metrics = stats.as_metrics()
        if self.curriculum is not None:
            # Every process must see the same results, or their samplers (seeded alike) drift apart.
            levels = _gather([self.tasks[k].level for k in task_key])
            self.curriculum.update(levels, _gather([bool(r.correct) for r in results]))
            metrics["curriculum/level2_share"] = self.curriculum.p
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(name, value)
        if self.on_batch:
            self.on_batch(stats)


class AsyncVerifierReward(VerifierReward):
    """The same reward as a coroutine: TRL runs async reward functions on its event loop, so verification
    (subprocesses) overlaps with other async reward functions instead of blocking them."""

    async def __call__(self, prompts=None, completions=None, task_key=None, log_metric=None, **columns):
        rewards, results = await asyncio.to_thread(self.score, completions, task_key)
        self._account(results, rewards, task_key, log_metric)
        return rewards


def _gather(values: list) -> list:
    """All processes' values (one process: unchanged)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return values
    from accelerate.utils import gather_object

    return list(gather_object(values))


_VERL_VERIFIERS: dict[str, object] = {}


def _task_for(ground_truth: str, extra_info: dict | None) -> KernelTask:
    if extra_info and isinstance(extra_info.get("task"), dict):
        return KernelTask.from_dict(extra_info["task"])
    if "class Model" in ground_truth:
        from tritonrl.tasks.levels import classify_level

        name = (extra_info or {}).get("name", "verl_task")
        return KernelTask(name=name, level=classify_level(ground_truth), source=ground_truth)
    from tritonrl.tasks import get_task

    return get_task(ground_truth)


def compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float:
    """verl custom reward: verify ``solution_str`` against the task given by ``ground_truth``."""
    from tritonrl.verify import Verifier, VerifyItem

    device = (extra_info or {}).get("device", "auto")
    verifier = _VERL_VERIFIERS.get(device)
    if verifier is None:
        verifier = _VERL_VERIFIERS[device] = Verifier(VerifyConfig(device=device))
    task = _task_for(ground_truth, extra_info)
    result = verifier.verify_many([VerifyItem(task, completion=solution_str)])[0]
    return float(compute_reward(result, RewardConfig()))
