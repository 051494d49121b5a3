"""A daemon thread that calls a function every few seconds from ``start()`` until ``stop()``.

    PeriodicThread(tick, interval_s=600, name="tritonrl-mirror").start() ... .stop()

The run's background jobs share it: ``MirrorThread`` (push the run dir) and ``PreemptionWatcher`` (poll for a
pre-emption notice). ``tick`` returning True ends the thread (the watcher, once it has raised the stop request).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Self


class PeriodicThread:
    """Call ``tick`` every ``interval_s`` seconds in a daemon thread: first after one interval, or at once with
    ``immediately``; until ``stop()`` or until ``tick`` returns True."""

    def __init__(self, tick: Callable[[], bool | None], interval_s: float, name: str, immediately: bool = False):
        self.tick = tick
        self.interval_s = interval_s
        self.immediately = immediately
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def _loop(self) -> None:
        if not self.immediately and self._stop.wait(self.interval_s):
            return
        while not self._stop.is_set():
            if self.tick():
                return
            self._stop.wait(self.interval_s)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask the thread to end and wait up to ``timeout_s`` for a tick in progress to finish."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout_s)
