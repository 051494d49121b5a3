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

Across processes: ``RWLock`` only orders the threads of one process. When several processes verify on one
machine (one ``Verifier`` per training rank, an evaluation beside a training run), ``CrossProcessGpuLocks`` adds a
per-GPU file lock (``fcntl.flock`` on ``<lock dir>/gpu-<id>.lock``) that the parent takes, after the in-process
exclusive lock, around each timing run: no two timing runs on one GPU overlap, whichever process started them.
The lock dir is ``$TRITONRL_GPU_LOCK_DIR`` or ``<tmp>/tritonrl-gpu-locks`` (one per machine, shared by every
user); the kernel drops a lock when its holder dies, so a killed process never leaves a GPU locked. GPU ids are
compared as written (``CUDA_VISIBLE_DEVICES`` entries): processes that name one GPU differently (an index and a
UUID) do not see each other's lock. Compilation and correctness trials of other processes are not held off
(a shared cross-process lease would be a lock per candidate; timing is what needs the GPU alone).
"""

from __future__ import annotations

import fcntl
import os
import queue
import tempfile
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


# ---------------------------------------------------------------- across processes
LOCK_DIR_ENV = "TRITONRL_GPU_LOCK_DIR"


def default_lock_dir() -> str:
    return os.environ.get(LOCK_DIR_ENV) or os.path.join(tempfile.gettempdir(), "tritonrl-gpu-locks")


class GpuFileLock:
    """Exclusive use of one GPU among processes: ``flock`` on a per-GPU lock file (released when its holder
    dies). Each ``hold()`` opens its own file description, so two holders in one process exclude each other too."""

    def __init__(self, gpu: str, lock_dir: str | None = None) -> None:
        self.gpu = gpu
        self.lock_dir = lock_dir or default_lock_dir()
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in gpu)
        self.path = os.path.join(self.lock_dir, f"gpu-{safe}.lock")

    def _open(self) -> int:
        if not os.path.isdir(self.lock_dir):
            os.makedirs(self.lock_dir, exist_ok=True)
            try:  # one directory for every user of the machine, like /tmp itself
                os.chmod(self.lock_dir, 0o1777)
            except OSError:
                pass
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)
        except OSError:
            pass
        return fd

    @contextmanager
    def hold(self) -> Iterator[float]:
        """The GPU's file lock for the block; yields the seconds waited for it."""
        fd = self._open()
        start = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield time.monotonic() - start
        finally:
            os.close(fd)  # closing the last descriptor releases the lock


class CrossProcessGpuLease(GpuLease):
    """A ``GpuLease`` whose exclusive mode also holds the GPU's file lock (taken after the in-process lock, so
    threads of one process queue in memory and only one of them waits on the file)."""

    def __init__(self, gpu: str, lock: RWLock, file_lock: GpuFileLock) -> None:
        super().__init__(gpu, lock)
        self.file_lock = file_lock

    @contextmanager
    def exclusive(self) -> Iterator[float]:
        with super().exclusive() as waited, self.file_lock.hold() as waited_file:
            self.waited_s += waited_file
            yield waited + waited_file


class CrossProcessGpuLocks(GpuLocks):
    """``GpuLocks`` whose timing runs are exclusive across processes too (``CrossProcessGpuLease``)."""

    def __init__(self, gpus: list[str], per_gpu: int = 1, lock_dir: str | None = None) -> None:
        super().__init__(gpus, per_gpu)
        self.file_locks = {gpu: GpuFileLock(gpu, lock_dir) for gpu in self.gpus}

    @contextmanager
    def slot(self) -> Iterator[GpuLease]:
        gpu = self._slots.get()
        lease = CrossProcessGpuLease(gpu, self.locks[gpu], self.file_locks[gpu])
        try:
            lease.share()
            yield lease
        finally:
            lease.release()
            self._slots.put(gpu)
