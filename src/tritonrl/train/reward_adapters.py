"""Reward adapters around the one verifier: TRL reward functions and verl's ``compute_score``.

TRL (GRPO, RLOO) calls ``VerifierReward(prompts=..., completions=..., task_key=[...], log_metric=..., ...)``
once per generation batch; all completions go to ONE ``Verifier.verify_many`` call so the verifier can run
them in parallel. Rewards come from ``tritonrl.common.reward.compute_reward``, the same function evaluation uses.
Per-batch metrics (format/compile/correct rates, mean speedup and the mean lower end of its 95% interval, the
share surely faster than the reference) go through TRL's ``log_metric`` hook, and the batch's Level-1
correctness updates the curriculum. Learning-signal health goes the same way: ``signal/reward_std``
and ``signal/frac_zero_std_groups`` (of the verifier's rewards, in groups of ``group_size`` consecutive completions:
TRL's layout), ``verify/time_s`` and, with the cache on, ``verify/cache_hit_rate``.

Two switches for the learning demonstration (``docs/results.md``): ``cache=True`` verifies each distinct
(task, extracted code) once per run and reuses the verdict (correctness-only rewards: nothing timed is reused
meaningfully); ``shuffle=True`` is the shuffled-reward control: each batch's rewards are permuted across its
completions before TRL sees them, so the reward distribution is unchanged but carries no information about the
completion. Logged metrics always describe the true verdicts.

verl: point ``custom_reward_function.path`` at this file and ``name`` at ``compute_score``; ``ground_truth``
is the task's source (or a bundled task name), ``extra_info`` may hold ``{"task": KernelTask.to_dict()}``.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tritonrl.common.reward import compute_reward, speedup_interval
from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.tasks.model import KernelTask


@dataclass
class BatchStats:
    """What one reward batch looked like; the speedup numbers are None when nothing was timed (CPU).

    ``mean_speedup`` is the mean point speedup of correct samples, ``mean_speedup_ci95_low`` the mean lower end
    of their 95% intervals (what the reward credits), ``surely_faster_rate`` the share of the batch that is
    correct with an interval entirely above 1 (the only samples that earn speed credit). ``declined_rate`` is
    the share the verifier declined (tasks it cannot judge on its device: rewarded as a failure at the stage
    reached, docs/verifier.md, "Declined verdicts"); logged only when some were.
    """

    n: int
    format_rate: float
    compile_rate: float
    correct_rate: float
    mean_reward: float
    mean_speedup: float | None
    mean_speedup_ci95_low: float | None = None
    surely_faster_rate: float | None = None
    declined_rate: float = 0.0

    def as_metrics(self) -> dict[str, float]:
        metrics = {"verify/format_rate": self.format_rate, "verify/compile_rate": self.compile_rate,
                   "verify/correct_rate": self.correct_rate, "verify/mean_reward": self.mean_reward}
        optional = {"verify/mean_speedup": self.mean_speedup,
                    "verify/mean_speedup_ci95_low": self.mean_speedup_ci95_low,
                    "verify/surely_faster_rate": self.surely_faster_rate,
                   "verify/declined_rate": self.declined_rate or None}
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
        correct_rate=sum(bool(r.correct) for r in results) / n,
        mean_reward=sum(rewards) / n,
        mean_speedup=sum(speedups) / len(speedups) if speedups else None,
        mean_speedup_ci95_low=sum(lows) / len(lows) if lows else None,
        surely_faster_rate=sum(low > 1.0 for low in lows) / n if lows else None,
        declined_rate=sum(getattr(r, "declined", None) is not None for r in results) / n,
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
                 on_batch: Callable[[BatchStats], None] | None = None, group_size: int = 1,
                 cache: bool = False, shuffle: bool = False, seed: int = 0):
        if verifier is None:
            from tritonrl.verify.parent.backends import make_verifier
            from tritonrl.verify.parent.known_good import checked

            config = verify_config or VerifyConfig()
            verifier = checked(make_verifier(config), config, "the reward")  # verify.backend: local, ray or http
        self.tasks = tasks
        self.verifier = verifier
        self.reward_config = reward_config or RewardConfig()
        self.curriculum = curriculum
        self.on_batch = on_batch
        self.last_stats: BatchStats | None = None
        self.history: list[BatchStats] = []
        self.group_size = max(1, group_size)
        self.cache: dict[tuple[str, str], object] | None = {} if cache else None
        self.shuffle_rng = random.Random(seed) if shuffle else None
        self.health: list[dict[str, float]] = []  # one entry per reward batch: signal_health() of that batch
        self.background = None  # a BackgroundVerification (tritonrl.train.reward_overlap), rl.generation_chunks > 1

    def close(self) -> None:
        """Release the verifier's worker processes, if it has any."""
        close = getattr(self.verifier, "close", None)
        if close:
            close()

    def score(self, completions: Sequence, task_key: Sequence[str]) -> tuple[list[float], list]:
        """Verify every completion in one batch (each distinct one once, with the cache on); (rewards, results)."""
        from tritonrl.verify import VerifyItem

        if task_key is None:
            raise ValueError("the training dataset needs a 'task_key' column for VerifierReward")
        if self.background is not None:  # verdicts of chunks verified while the rest was generated
            results = self.background.collect(self, completions, task_key)
            return [compute_reward(r, self.reward_config) for r in results], results
        started = time.perf_counter()
        keys = [self._cache_key(key, c) for key, c in zip(task_key, completions, strict=True)]
        known = self.cache if self.cache is not None else {}
        todo: dict[tuple[str, str], VerifyItem] = {}
        for key, c, cache_key in zip(task_key, completions, keys, strict=True):
            if cache_key not in known and cache_key not in todo:
                todo[cache_key] = self.item(key, c)
        fresh = dict(zip(todo, self.verifier.verify_many(list(todo.values())), strict=True)) if todo else {}
        if self.cache is not None:
            self.cache.update(fresh)
        results = [fresh[k] if k in fresh else known[k] for k in keys]
        self._verify_s, self._hits = time.perf_counter() - started, len(keys) - len(todo)
        self._wait_s = self._verify_s
        return [compute_reward(r, self.reward_config) for r in results], results

    def item(self, task_key: str, completion):
        """The ``VerifyItem`` judging ``completion`` for ``task_key`` (a benchmark feeds real candidates here)."""
        from tritonrl.verify import VerifyItem

        return VerifyItem(self.tasks[task_key], completion=completion)

    def _cache_key(self, task_key: str, completion) -> tuple[str, str]:
        from tritonrl.extract import completion_text, extract_code

        # Keyed on the extracted code: TRL passes conversational completions as message lists, whose str() never
        # extracts (escaped newlines), so a key made from it never hit.
        code = extract_code(completion) if self.cache is not None else None
        text = completion_text(completion) or repr(completion)
        # Without the cache every completion is its own key (even two identical texts are verified twice).
        return (task_key, code) if code is not None else (task_key, f"\0{id(completion)}:{text}")

    def __call__(self, prompts=None, completions=None, task_key=None, log_metric=None, **columns) -> list[float]:
        rewards, results = self.score(completions, task_key)
        self._account(results, rewards, task_key, log_metric)
        return self._shuffled(rewards)

    def _shuffled(self, rewards: list[float]) -> list[float]:
        """``shuffle``: each group's rewards (``group_size`` consecutive completions of one prompt) permuted among
        its own completions. The control keeps every group's reward distribution, so a group GRPO learns nothing
        from (all equal) stays so, and only the link between a completion and its reward is cut."""
        if self.shuffle_rng is None:
            return rewards
        out: list[float] = []
        for group in groups_of(rewards, self.group_size):
            self.shuffle_rng.shuffle(group)
            out.extend(group)
        return out

    def _account(self, results, rewards, task_key, log_metric, health: dict[str, float] | None = None) -> None:
        """Log the batch's verdicts and learning-signal ``health`` (default: of ``rewards`` in ``group_size``
        groups) and feed the curriculum."""
        stats = batch_stats(results, rewards)
        self.last_stats = stats
        self.history.append(stats)
        metrics = stats.as_metrics()
        health = dict(health) if health is not None else signal_health(rewards, self.group_size)
        health["verify/time_s"] = getattr(self, "_verify_s", 0.0)
        if self.background is not None:  # how much of the verification the step did not wait for
            health["verify/wait_s"] = getattr(self, "_wait_s", 0.0)
            health["verify/hidden_fraction"] = hidden_fraction(health["verify/time_s"], health["verify/wait_s"])
        if self.cache is not None:
            health["verify/cache_hit_rate"] = getattr(self, "_hits", 0) / max(1, len(rewards))
        self.health.append(health)
        metrics.update(health)
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
        return self._shuffled(rewards)


def hidden_fraction(verify_s: float, wait_s: float) -> float:
    """Share of the verification's seconds the trainer spent on other work (1: the step never waited for it)."""
    return 0.0 if verify_s <= 0 else min(1.0, max(0.0, 1.0 - wait_s / verify_s))


def signal_health(rewards: Sequence[float], group_size: int) -> dict[str, float]:
    """Is there anything for a group-relative method to learn from? Std of the batch's rewards, and the share of
    groups (``group_size`` consecutive completions of one prompt) whose rewards are all equal: those groups give
    GRPO zero advantage, hence no gradient."""
    return groups_health(groups_of([float(r) for r in rewards], group_size))


def groups_of(values: Sequence[float], group_size: int) -> list[list[float]]:
    """``values`` cut into groups of ``group_size`` consecutive items (one prompt's completions; TRL's order)."""
    size = max(1, group_size)
    return [list(values[i:i + size]) for i in range(0, len(values), size)]


def groups_health(groups: Sequence[Sequence[float]]) -> dict[str, float]:
    """``signal_health`` of rewards already split into the groups advantages are computed in (multi-turn GRPO
    splits each prompt's group by turn: ``tritonrl.train.multiturn.turn_groups``)."""
    rewards = [float(r) for group in groups for r in group]
    flat = sum(1 for g in groups if max(g) - min(g) < 1e-9) if groups else 0
    return {"signal/reward_mean": statistics.fmean(rewards) if rewards else 0.0,
            "signal/reward_std": statistics.pstdev(rewards) if len(rewards) > 1 else 0.0,
            "signal/frac_zero_std_groups": flat / max(1, len(groups))}


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
        from tritonrl.verify.parent.known_good import checked

        config = VerifyConfig(device=device)
        verifier = _VERL_VERIFIERS[device] = checked(Verifier(config), config, "tritonrl's verl reward")
    task = _task_for(ground_truth, extra_info)
    result = verifier.verify_many([VerifyItem(task, completion=solution_str)])[0]
    return float(compute_reward(result, RewardConfig()))
