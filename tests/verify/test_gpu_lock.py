"""Sharing a GPU: the readers-writer lock, the slots, the timing-gate protocol and the Verifier's scheduling.

No GPU is needed: the lock and slots are plain threads; the protocol runs against fake children (threads that
follow the harness's gate files) on fake GPU ids; the Verifier's scheduling runs real CPU children on fake GPU
slot ids. The GPU side (real timings with ``workers_per_gpu`` > 1) is in ``benchmarks/verify_gpu_throughput.py``.
"""

import os
import threading
import time
from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tritonrl.verify import Stage, VerifyItem
from tritonrl.verify.gpu_lock import GpuLocks, RWLock
from tritonrl.verify.verifier import run_exclusive

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"
SETTLE_S = 0.05  # long enough for a thread that could take the lock to have taken it


def _start(target) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- the lock
def test_writer_waits_for_readers():
    lock, got = RWLock(), threading.Event()
    lock.acquire_shared()
    lock.acquire_shared()
    writer = _start(lambda: (lock.acquire_exclusive(), got.set()))
    lock.release_shared()
    assert not got.wait(SETTLE_S)  # one reader still holds it
    lock.release_shared()
    assert got.wait(2)
    lock.release_exclusive()
    writer.join(2)
    assert lock.idle()


def test_waiting_writer_keeps_new_readers_out():
    lock, order = RWLock(), []
    lock.acquire_shared()
    writer = _start(lambda: (lock.acquire_exclusive(), order.append("writer"), time.sleep(SETTLE_S),
                             lock.release_exclusive()))
    while not lock.writers_waiting:
        time.sleep(0.001)
    reader = _start(lambda: (lock.acquire_shared(), order.append("reader"), lock.release_shared()))
    time.sleep(SETTLE_S)
    assert order == []  # the new reader does not overtake the waiting writer
    lock.release_shared()
    writer.join(2)
    reader.join(2)
    assert order == ["writer", "reader"]
    assert lock.idle()


def test_releases_without_holding_raise():
    with pytest.raises(RuntimeError):
        RWLock().release_shared()
    with pytest.raises(RuntimeError):
        RWLock().release_exclusive()


def test_slot_and_exclusive_release_on_exceptions():
    locks = GpuLocks(["0"], per_gpu=1)
    with pytest.raises(ValueError), locks.slot() as lease:
        assert lease.mode == "shared"
        raise ValueError
    with pytest.raises(ValueError), locks.slot() as lease, lease.exclusive():
        assert lease.mode == "exclusive"
        raise ValueError
    assert locks.locks["0"].idle()
    with locks.slot() as lease:  # the single slot came back both times
        assert lease.gpu == "0"


def test_slots_interleave_gpus_and_cap_children_per_gpu():
    locks = GpuLocks(["3", "5"], per_gpu=2)
    assert locks.capacity == 4
    held, blocked = [], threading.Event()
    for _ in range(4):
        context = locks.slot()
        held.append((context, context.__enter__()))
    assert [lease.gpu for _, lease in held] == ["3", "5", "3", "5"]
    assert [locks.locks[g].readers for g in ("3", "5")] == [2, 2]
    fifth = _start(lambda: (locks.slot().__enter__(), blocked.set()))
    assert not blocked.wait(SETTLE_S)  # a fifth child would be a third on one GPU
    held[0][0].__exit__(None, None, None)
    assert blocked.wait(2)
    fifth.join(2)


def test_exclusive_gives_up_shared_first_so_two_timings_do_not_deadlock():
    locks, done = GpuLocks(["0"], per_gpu=2), []

    def candidate() -> None:
        with locks.slot() as lease:
            time.sleep(SETTLE_S)  # both hold shared before either asks for exclusive
            with lease.exclusive():
                done.append(lease.mode)

    threads = [_start(candidate) for _ in range(2)]
    for thread in threads:
        thread.join(3)
    assert done == ["exclusive", "exclusive"]
    assert locks.locks["0"].idle()


# ---------------------------------------------------------------- the gate protocol, with fake children
class FakeChild:
    """A thread that behaves like the harness: GPU work, then ``gate_timing``, wait for go, time, report.

    Its GPU work and timing intervals go to a shared log so overlaps can be checked. ``kind``: "good",
    "fails" (ends after its correctness work, no gate), "hang" (never reaches the gate)."""

    def __init__(self, workdir: str, gpu: str, log: list, kind: str = "good") -> None:
        self.workdir, self.gpu, self.log, self.kind = workdir, gpu, log, kind
        self.exited = threading.Event()
        self.killed = False
        _start(self._run)

    def path(self, name: str) -> str:
        return os.path.join(self.workdir, name)

    def verdict(self, name: str, go: bool = True) -> None:
        with open(self.path(f"verdict_{name}"), "w") as fh:
            fh.write("go" if go else "stop")

    def wait_for(self, name: str, deadline: float) -> str:
        while True:
            if os.path.exists(self.path(name)):
                return "ok"
            if self.exited.is_set():
                return "exit"
            if time.monotonic() > deadline:
                return "timeout"
            time.sleep(0.001)

    def exit(self):
        return True if self.exited.is_set() else None

    def kill(self) -> None:
        self.killed = True

    def _interval(self, what: str, seconds: float) -> None:
        start = time.monotonic()
        time.sleep(seconds)
        self.log.append((what, self.gpu, id(self), start, time.monotonic()))

    def _touch(self, name: str) -> None:
        with open(self.path(name), "w") as fh:
            fh.write("x")

    def _run(self) -> None:
        self._interval("work", 0.02)  # import, compile, correctness trials
        if self.kind == "hang":
            give_up = time.monotonic() + 3  # the parent does not kill fake children: do not linger
            while not self.killed and time.monotonic() < give_up:
                time.sleep(0.005)
            self.exited.set()
            return
        if self.kind == "fails":
            self.exited.set()
            return
        self._touch("gate_timing")
        while not os.path.exists(self.path("verdict_gate_timing")):
            time.sleep(0.001)
        self._interval("timing", 0.01)
        self._touch("timing.json")
        self.exited.set()


def _simulate(tmp_path, locks: GpuLocks | None, kinds: list[str], gpus: list[str]) -> tuple[list, dict]:
    log, outcomes = [], {}

    def candidate(k: int, kind: str) -> None:
        workdir = tmp_path / f"c{k}"
        workdir.mkdir()
        if locks is None:  # no lock at all: the control that shows the check can fail
            child = FakeChild(str(workdir), gpus[k % len(gpus)], log, kind)
            outcomes[k] = run_exclusive(child, None, "timing", "timing.json", time.monotonic() + 1.0)
            return
        with locks.slot() as lease:
            child = FakeChild(str(workdir), lease.gpu, log, kind)
            outcomes[k] = run_exclusive(child, lease, "timing", "timing.json", time.monotonic() + 1.0)

    threads = [_start(lambda k=k, kind=kind: candidate(k, kind)) for k, kind in enumerate(kinds)]
    for thread in threads:
        thread.join(10)
    return log, outcomes


def _timing_overlaps(log: list) -> int:
    timings = [e for e in log if e[0] == "timing"]
    return sum(1 for what, gpu, who, start, end in timings for other in log
               if other[1] == gpu and other[2] != who and other[3] < end and start < other[4])


def test_timing_never_overlaps_other_gpu_work(tmp_path):
    locks = GpuLocks(["0", "1"], per_gpu=3)
    kinds = ["good", "good", "fails", "good", "hang", "good", "good", "good", "fails", "good", "good", "good"]
    log, outcomes = _simulate(tmp_path, locks, kinds, locks.gpus)
    assert sum(e[0] == "timing" for e in log) == kinds.count("good")
    assert _timing_overlaps(log) == 0
    work = sorted((e[3], e[4], e[1]) for e in log if e[0] == "work")
    overlapping_work = sum(1 for i, a in enumerate(work) for b in work[i + 1:] if a[2] == b[2] and b[0] < a[1])
    assert overlapping_work > 0  # correctness of several candidates did share a GPU
    assert sorted(outcomes.values()) == sorted({"good": "ok", "fails": "exit", "hang": "timeout"}[k] for k in kinds)
    assert all(lock.idle() for lock in locks.locks.values())  # the hang and the failures released theirs


def test_without_the_lock_timings_do_overlap(tmp_path):
    log, _ = _simulate(tmp_path, None, ["good"] * 6, ["0"])
    assert _timing_overlaps(log) > 0


def test_lock_wait_is_not_charged_to_the_candidate(tmp_path):
    locks = GpuLocks(["0"], per_gpu=1)
    child = FakeChild(str(tmp_path), "0", [])
    with locks.slot() as lease:
        lease.release()  # another candidate's timing holds the GPU for longer than this one's deadline
        locks.locks["0"].acquire_exclusive()
        threading.Timer(0.3, locks.locks["0"].release_exclusive).start()
        assert run_exclusive(child, lease, "timing", "timing.json", time.monotonic() + 0.2) == "ok"


# ---------------------------------------------------------------- the Verifier's scheduling on fake GPU ids
class CountingLock(RWLock):
    def __init__(self) -> None:
        super().__init__()
        self.most_readers = 0

    def acquire_shared(self) -> None:
        super().acquire_shared()
        self.most_readers = max(self.most_readers, self.readers)


def test_verifier_runs_two_children_per_fake_gpu_and_releases_all(runtime_verifier, monkeypatch):
    verifier = runtime_verifier
    locks = GpuLocks(["7", "8"], per_gpu=2)
    locks.locks = {gpu: CountingLock() for gpu in locks.gpus}
    spawned: list[str] = []
    original_spawn = verifier._spawn

    def spawn(kind, spec, workdir, lease):
        spawned.append(lease.gpu)
        return original_spawn(kind, spec, workdir, lease)

    monkeypatch.setattr(verifier, "_gpus", locks)
    monkeypatch.setattr(verifier, "_spawn", spawn)
    good, crash = (RUNTIME / "good_relu.py").read_text(), (RUNTIME / "os_exit.py").read_text()
    codes = [good, crash, good, good, f"# another\n{good}", crash]
    results = verifier.verify_many([VerifyItem(TASKS["relu"], code=c) for c in codes])
    assert [r.correct for r in results] == [c is not crash for c in codes]
    assert results[1].stage != Stage.DONE
    assert set(spawned) <= {"7", "8"} and len(spawned) >= len(codes)
    assert all(lock.most_readers <= 2 for lock in locks.locks.values())
    assert max(lock.most_readers for lock in locks.locks.values()) == 2
    assert all(lock.idle() for lock in locks.locks.values())
