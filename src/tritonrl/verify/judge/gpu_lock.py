"""Sharing a GPU between candidates: a per-GPU readers-writer lock, held by the GPU's judge.

    lock = RWLock()
    lease = CrossProcessGpuLease("0", lock, GpuFileLock("0"))
    lease.share(); ...; lease.release()      # a child's trial, a reference, a comparison: GPU work side by side
    with lease.exclusive() as waited:        # a timing run: nobody else's GPU work, in this judge or any other
        ...

The judge (``tritonrl.verify.judge.session``) takes a shared lease around every unit of GPU work of a candidate
(its import, each trial's build and forward, the comparison) and the exclusive lease around its timing run, so a
timing run never overlaps any GPU work of the judge's other candidates (docs/timing.md, "Sharing a GPU"). The lock
is writer-preferring: while a timing run waits, no new shared lease is granted, and the units already running go on
until they finish; when a timing run ends, the readers that waited for it go before the next timing run
(phase-fair), so queued timing runs never hold the other candidates' work back for more than one run each.
A lease is held by one thread and holds at most one mode at a time, so nobody waits for the
exclusive lock while holding a shared one (no deadlock). Children take no locks: they do GPU work only when their
judge sends them a call.

Across processes: ``RWLock`` only orders the threads of one process. When several processes verify on one
machine (one ``Verifier`` per training rank, an evaluation beside a training run), ``CrossProcessGpuLease`` adds a
per-GPU file lock (``fcntl.flock`` on ``<lock dir>/gpu-<id>.lock``) that the judge takes, after the in-process
exclusive lock, around each timing run: no two timing runs on one GPU overlap, whichever process started them.
The lock dir is ``$TRITONRL_GPU_LOCK_DIR`` or ``<tmp>/tritonrl-gpu-locks`` (one per machine, shared by every
user); the kernel drops a lock when its holder dies, so a killed process never leaves a GPU locked. GPU ids are
compared as written (``CUDA_VISIBLE_DEVICES`` entries): processes that name one GPU differently (an index and a
UUID) do not see each other's lock. Correctness work of other processes is not held off (a shared cross-process
lease would be a lock per call; timing is what needs the GPU alone). A trainer that generates while its reward is
verified (``rl.generation_chunks > 1``) holds the file lock shared around each chunk's generation
(``GpuFileLock.hold(shared=True)``), so timing runs fall between chunks or after them; a judge whose timing run
waits for the file lock gives its in-process exclusive lock back while it waits (``CrossProcessGpuLease``), so
its other candidates' trials go on beside the generation.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    """Many readers or one writer, phase-fair: a waiting writer keeps new readers out, and a writer's release lets
    every reader already waiting in before the next writer. Writer preference alone let a queue of timing runs
    starve the shared work of the candidates behind them (their references, imports, trials, even closing a
    session's arena): on an H100 the GPU then sat idle for 4 s while they caught up."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.readers = 0
        self.writer = False
        self.writers_waiting = 0
        self.readers_waiting = 0
        self.admitted = 0  # readers a writer's release let in ahead of the writers still waiting

    def acquire_shared(self) -> None:
        with self._cond:
            self.readers_waiting += 1
            try:
                self._cond.wait_for(lambda: not self.writer and (not self.writers_waiting or self.admitted > 0))
            finally:
                self.readers_waiting -= 1
                # Never more admitted than are still waiting: a writer must not wait for readers that left.
                self.admitted = max(0, min(self.admitted - 1, self.readers_waiting))
                self._cond.notify_all()
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
                self._cond.wait_for(lambda: not self.writer and not self.readers and not self.admitted)
            finally:
                self.writers_waiting -= 1
                self._cond.notify_all()  # a writer that gave up waiting must not keep readers out
            self.writer = True

    def release_exclusive(self) -> None:
        with self._cond:
            if not self.writer:
                raise RuntimeError("release_exclusive without the exclusive lock")
            self.writer = False
            self.admitted = self.readers_waiting  # their phase comes before the next writer's
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

    def try_hold(self) -> int | None:
        """The exclusive file lock now, as an open descriptor (close it to release), or None if another holder
        has it."""
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    @contextmanager
    def hold(self, shared: bool = False) -> Iterator[float]:
        """The GPU's file lock for the block; yields the seconds waited for it. ``shared``: held beside other
        shared holders and against every exclusive one: a trainer generating on the GPU while its verifier works
        beside it (``tritonrl.train.reward_overlap``) holds it shared, so no timing run overlaps the generation."""
        fd = self._open()
        start = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            yield time.monotonic() - start
        finally:
            os.close(fd)  # closing the last descriptor releases the lock


FILE_LOCK_POLL_S = 0.02  # how often a timing run asks again for a GPU another process holds


class CrossProcessGpuLease(GpuLease):
    """A ``GpuLease`` whose exclusive mode also holds the GPU's file lock (taken after the in-process lock, so
    threads of one process queue in memory and only one of them waits on the file).

    The file lock is asked for without blocking: while another process holds it (its timing run, or a trainer
    generating on this GPU, ``rl.generation_chunks``, which holds it shared for seconds), the in-process exclusive
    lock is given back and asked for again ``FILE_LOCK_POLL_S`` later, so this judge's other candidates (their
    trials, under the shared lease) go on meanwhile instead of waiting behind a timing run that cannot start.
    Once both are held, the timing run has the GPU to itself as before."""

    def __init__(self, gpu: str, lock: RWLock, file_lock: GpuFileLock) -> None:
        super().__init__(gpu, lock)
        self.file_lock = file_lock

    @contextmanager
    def exclusive(self) -> Iterator[float]:
        waited = 0.0
        while True:
            with super().exclusive() as waited_lock:
                waited += waited_lock
                fd = self.file_lock.try_hold()
                if fd is not None:
                    try:
                        yield waited
                    finally:
                        os.close(fd)  # closing the descriptor releases the file lock
                    return
            time.sleep(FILE_LOCK_POLL_S)  # outside the in-process lock: the shared work of this judge goes on
            waited += FILE_LOCK_POLL_S
            self.waited_s += FILE_LOCK_POLL_S
