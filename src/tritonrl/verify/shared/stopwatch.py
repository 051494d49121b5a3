"""Seconds per named step, for diagnosis: where a cold start or a timing run spends its time.

    watch = Stopwatch()
    with watch("cuda"):
        torch.empty(1, device="cuda")
    watch.seconds()         # {"cuda": 0.161}
    watch.with_counts()     # {"cuda": [0.161, 1]}: a step entered several times adds up

Used by the zygote, the judge and the candidate's harness (``Verifier.startup``, ``stage_s["child_start"]``) and by
the judge's timing run (``stage_s["timing_parts"]``). Nothing decides a verdict from these figures.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager


class Stopwatch:
    def __init__(self) -> None:
        self.began = time.monotonic()  # where the watch started (monotonic s, comparable across this machine)
        self._seconds: dict[str, float] = defaultdict(float)
        self._counts: dict[str, int] = defaultdict(int)

    @contextmanager
    def __call__(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self._seconds[name] += time.perf_counter() - start
            self._counts[name] += 1

    def seconds(self, digits: int = 4) -> dict[str, float]:
        return {name: round(s, digits) for name, s in self._seconds.items()}

    def with_counts(self, digits: int = 4) -> dict[str, list]:
        return {name: [round(s, digits), self._counts[name]] for name, s in self._seconds.items()}
