"""Sharing a GPU between candidates: slots and a per-GPU readers-writer lock, held by the trusted parent.

    locks = GpuLocks(["0", "1"], per_gpu=4)     # 8 slots: each GPU id 4 times
    with locks.slot() as lease:                  # a shared ("busy") lease on lease.gpu, before the child starts
        child = spawn(..., lease.gpu)            # it imports, compiles and runs its correctness trials
        with lease.exclusive() as waited:        # the child is at its timing gate: shared given up, then the
            ...                                  # GPU to ourselves: say go, wait for its timing
    # everything released on the way out, exceptions included

Compilation and correctness trials of several candidates overlap on one GPU; a timing run never overlaps any
GPU work of our other children on that GPU (docs/timing.md, "Sharing a GPU"). The lock is writer-preferring:
while a timing run waits, no new shared lease is granted (no new child starts on that GPU), and the children
already running go on until they finish or reach their own timing gate. A lease is held by one thread and holds
at most one mode at a time, so nobody waits for the exclusive lock while holding a shared one (no deadlock).
Children take no locks themselves: they only wait for the parent's go file (``harness._gate``).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers (writer preference)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.readers = 0
        self.writer = False
        self.writers_waiting = 0

    def acquire_shared(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: not self.writer and not self.writers_waiting)
            self.readers += 1

    def release_shared(self) -> None:
        with self._cond:
            if self.readers < 1:
                raise RuntimeError("release_shared without a shared lease")
            self.readers -= 1
            self._cond.notify_all()

    def acquire_exclusive(self) -> None:
        with self._cond:
            self.writers_waiting += 1
            try:
                self._cond.wait_for(lambda: not self.writer and not self.readers)
            finally:
                self.writers_waiting -= 1
                self._cond.notify_all()  # a writer that gave up waiting must not keep readers out
            self.writer = True

    def release_exclusive(self) -> None:
        with self._cond:
            if not self.writer:
                raise RuntimeError("release_exclusive without the exclusive lock")
            self.writer = False
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return not self.readers and not self.writer and not self.writers_waiting


class GpuLease:
    """One thread's hold on one GPU: none, shared or exclusive, never two at once."""

    def __init__(self, gpu: str, lock: RWLock) -> None:
        self.gpu, self._lock = gpu, lock
        self.mode: str | None = None
        self.waited_s = 0.0  # seconds spent waiting for the lock (not the candidate's time)

    def share(self) -> float:
        """Take a shared lease (releasing whatever is held); returns the seconds waited."""
        self.release()
        start = time.monotonic()
        self._lock.acquire_shared()
        self.mode = "shared"
        return self._waited(start)

    def release(self) -> None:
        mode, self.mode = self.mode, None
        if mode == "shared":
            self._lock.release_shared()
        elif mode == "exclusive":
            self._lock.release_exclusive()

    @contextmanager
    def exclusive(self) -> Iterator[float]:
        """The GPU to ourselves for the block; the shared lease is given up first. Yields the seconds waited."""
        self.release()
        start = time.monotonic()
        self._lock.acquire_exclusive()
        self.mode = "exclusive"
        try:
            yield self._waited(start)
        finally:
            self.release()

    def _waited(self, start: float) -> float:
        waited = time.monotonic() - start
        self.waited_s += waited
        return waited


class GpuLocks:
    """The slots (each GPU id ``per_gpu`` times, interleaved so work spreads over GPUs first) and their locks."""

    def __init__(self, gpus: list[str], per_gpu: int = 1) -> None:
        self.gpus = list(dict.fromkeys(gpus))
        self.per_gpu = max(1, per_gpu)
        self.locks = {gpu: RWLock() for gpu in self.gpus}
        self._slots: queue.Queue[str] = queue.Queue()
        for _ in range(self.per_gpu):
            for gpu in self.gpus:
                self._slots.put(gpu)

    @property
    def capacity(self) -> int:
        return len(self.gpus) * self.per_gpu

    @contextmanager
    def slot(self) -> Iterator[GpuLease]:
        """A slot and a shared lease on its GPU; both given back on exit, whatever happened."""
        gpu = self._slots.get()
        lease = GpuLease(gpu, self.locks[gpu])
        try:
            lease.share()
            yield lease
        finally:
            lease.release()
            self._slots.put(gpu)
