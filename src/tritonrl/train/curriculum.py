"""Adaptive curriculum: how many RL prompts come from Level-2 (fusion) tasks, driven by Level-1 success.

The rule (``CurriculumConfig``):
  * The Level-2 share ``p`` starts at ``start_p`` (0.1).
  * After every reward batch (``update``), the rolling Level-1 correct rate is the mean over the last
    ``window`` Level-1 results. While that rate is at or above ``trigger`` (0.4), ``p`` moves one step of
    ``(end_p - start_p) / ramp_updates`` towards ``end_p`` (0.5): a linear ramp over ``ramp_updates``
    qualifying updates. Below the trigger ``p`` holds; it never falls back (a bad batch should not undo
    progress, and a falling share would make the reward curve hard to read).
  * Disabled (``enabled: false``), the curriculum samples tasks uniformly, whatever their level.

``CurriculumSampler`` is a torch ``Sampler`` over a dataset's rows that yields indices in the layout TRL's
GRPO/RLOO trainers expect (each prompt ``num_generations`` times in a row, chunks repeated for
``steps_per_generation`` updates) and reads ``p`` lazily, so updates made by the reward function take effect
on the next chunk. ``state_dict()/load_state_dict()`` capture ``p``, the rolling window and the RNG, and are
saved with every checkpoint.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator, Sequence

from torch.utils.data import Sampler

from tritonrl.config import CurriculumConfig


class Curriculum:
    """Level-2 share ``p`` and the rolling Level-1 correct rate that moves it."""

    def __init__(self, config: CurriculumConfig | None = None):
        self.config = config or CurriculumConfig()
        self.p = self.config.start_p
        self.updates = 0
        self.recent_l1: deque[float] = deque(maxlen=self.config.window)
        self.rng = random.Random(self.config.seed)

    @property
    def l1_correct_rate(self) -> float | None:
        return sum(self.recent_l1) / len(self.recent_l1) if self.recent_l1 else None

    def update(self, levels: Sequence[int], correct: Sequence[bool]) -> float:
        """Record one reward batch's results; returns the new Level-2 share."""
        self.updates += 1
        self.recent_l1.extend(float(c) for lvl, c in zip(levels, correct, strict=True) if lvl == 1)
        rate = self.l1_correct_rate
        if self.config.enabled and rate is not None and rate >= self.config.trigger:
            step = (self.config.end_p - self.config.start_p) / max(1, self.config.ramp_updates)
            self.p = min(self.config.end_p, self.p + step) if step >= 0 else max(self.config.end_p, self.p + step)
        return self.p

    def choose(self, by_level: dict[int, list[int]]) -> int:
        """One row index: Level-2 with probability p (when any exist), else Level-1 (or any other level)."""
        every = [i for rows in by_level.values() for i in rows]
        if not self.config.enabled:
            return self.rng.choice(every)
        hard = by_level.get(2, [])
        easy = [i for lvl, rows in by_level.items() if lvl != 2 for i in rows]
        if hard and (not easy or self.rng.random() < self.p):
            return self.rng.choice(hard)
        return self.rng.choice(easy)

    def state_dict(self) -> dict:
        return {"p": self.p, "updates": self.updates, "recent_l1": list(self.recent_l1),
                "rng": _rng_to_json(self.rng.getstate())}

    def load_state_dict(self, state: dict) -> None:
        self.p = float(state["p"])
        self.updates = int(state["updates"])
        self.recent_l1 = deque(state["recent_l1"], maxlen=self.config.window)
        self.rng.setstate(_rng_from_json(state["rng"]))


class CurriculumSampler(Sampler):
    """Endless torch-style sampler: chunks of ``batch_size`` prompts chosen by the curriculum, laid out as
    TRL's ``RepeatSampler`` does (each index ``mini_repeat_count`` times, each chunk ``repeat_count`` times).

    Training length comes from ``max_steps``; ``__len__`` reports a large number so the trainer never
    considers an epoch finished.
    """

    def __init__(self, levels: Sequence[int], curriculum: Curriculum, mini_repeat_count: int,
                 batch_size: int = 1, repeat_count: int = 1, length: int = 10**9):
        self.by_level: dict[int, list[int]] = {}
        for index, level in enumerate(levels):
            self.by_level.setdefault(int(level), []).append(index)
        if not self.by_level:
            raise ValueError("CurriculumSampler needs at least one row")
        self.curriculum = curriculum
        self.mini_repeat_count = mini_repeat_count
        self.batch_size = batch_size
        self.repeat_count = repeat_count
        self.length = length

    def __iter__(self) -> Iterator[int]:
        while True:
            chunk = [self.curriculum.choose(self.by_level) for _ in range(self.batch_size)]
            for _ in range(self.repeat_count):
                for index in chunk:
                    yield from [index] * self.mini_repeat_count

    def __len__(self) -> int:
        return self.length


def _rng_to_json(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _rng_from_json(state: list) -> tuple:
    version, internal, gauss = state
    return (version, tuple(internal), gauss)
