"""Sharing a GPU: the readers-writer lock and its leases, and the judge's use of them.

No GPU is needed: the lock is plain threads; the judge's scheduling runs real CPU children through one judge (the
timing seam ``TRITONRL_TIMING_ON_CPU=1`` gives them timing runs), and each verdict lists when its session held the
lock and in which mode (``VerifyResult.timing["gpu_lease"]``). The GPU side (real timings with ``workers_per_gpu``
> 1) is in ``benchmarks/verify_gpu_throughput.py``.
"""

import threading
import time
from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.judge.gpu_lock import GpuLease, RWLock

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


def test_readers_waiting_for_a_writer_go_before_the_next_writer():
    """Phase-fair: a queue of timing runs cannot starve the shared work waiting behind them. Timing run A holds
    the GPU, a candidate's trial waits, then timing run B asks: when A ends, the trial goes first, then B; a
    reader that comes after A ended, while B waits, does not overtake B."""
    lock, order = RWLock(), []
    lock.acquire_exclusive()  # timing run A
    reader = _start(lambda: (lock.acquire_shared(), order.append("reader"), time.sleep(4 * SETTLE_S),
                             lock.release_shared()))
    while not lock.readers_waiting:
        time.sleep(0.001)
    writer = _start(lambda: (lock.acquire_exclusive(), order.append("writer B"), lock.release_exclusive()))
    while not lock.writers_waiting:
        time.sleep(0.001)
    time.sleep(SETTLE_S)
    assert order == []
    lock.release_exclusive()
    while not order:
        time.sleep(0.001)
    late = _start(lambda: (lock.acquire_shared(), order.append("late reader"), lock.release_shared()))
    for thread in (reader, writer, late):
        thread.join(2)
    assert order == ["reader", "writer B", "late reader"]
    assert lock.idle() and lock.admitted == 0


def test_releases_without_holding_raise():
    with pytest.raises(RuntimeError):
        RWLock().release_shared()
    with pytest.raises(RuntimeError):
        RWLock().release_exclusive()


def test_exclusive_releases_on_exceptions_and_gives_up_shared_first():
    lock = RWLock()
    lease = GpuLease("0", lock)
    lease.share()
    with pytest.raises(ValueError), lease.exclusive():
        assert lease.mode == "exclusive" and lock.readers == 0
        raise ValueError
    assert lock.idle() and lease.mode is None


def test_two_leases_that_both_want_exclusive_do_not_deadlock():
    lock, done = RWLock(), []

    def candidate() -> None:
        lease = GpuLease("0", lock)
        lease.share()
        time.sleep(SETTLE_S)  # both hold shared before either asks for exclusive
        with lease.exclusive():
            done.append(lease.mode)

    threads = [_start(candidate) for _ in range(2)]
    for thread in threads:
        thread.join(3)
    assert done == ["exclusive", "exclusive"]
    assert lock.idle()


# ---------------------------------------------------------------- the judge's scheduling, real children
def _overlaps(results) -> tuple[int, int]:
    """(timing holds that overlap another candidate's hold of any mode, pairs of shared holds that overlap)."""
    holds = [(who, mode, start, end) for who, r in enumerate(results) for mode, start, end in r.timing.get("gpu_lease", [])]
    timing = sum(1 for a in holds for b in holds
                 if a[1] == "exclusive" and a[0] != b[0] and b[2] < a[3] and a[2] < b[3])
    shared = sum(1 for i, a in enumerate(holds) for b in holds[i + 1:]
                 if a[1] == b[1] == "shared" and a[0] != b[0] and b[2] < a[3] and a[2] < b[3])
    return timing, shared


def test_a_shared_file_lock_lets_shared_holders_in_and_keeps_a_timing_run_out(tmp_path):
    """A trainer generating beside its verifier holds the GPU's file lock shared (rl.generation_chunks): other
    shared holders come in, an exclusive one (a timing run) waits until every shared holder has left."""
    from tritonrl.verify.judge.gpu_lock import GpuFileLock

    lock = GpuFileLock("0", str(tmp_path))
    order = []

    def timing_run():
        with lock.hold():
            order.append("exclusive")

    with lock.hold(shared=True), lock.hold(shared=True) as waited:  # a second shared holder waits for nobody
        assert waited < 1.0
        thread = threading.Thread(target=timing_run)
        thread.start()
        time.sleep(0.3)
        order.append("shared released")
    thread.join(5)
    assert order == ["shared released", "exclusive"]


def test_a_timing_run_waiting_for_another_process_lets_the_judges_other_work_go_on(tmp_path):
    """While a trainer holds the GPU's file lock shared (generating), a timing run of the judge waits for it
    without holding the judge's in-process exclusive lock, so another candidate's shared lease is granted at once;
    once the trainer lets go, the timing run gets the GPU (both locks)."""
    from tritonrl.verify.judge.gpu_lock import CrossProcessGpuLease, GpuFileLock

    rw = RWLock()
    timing = CrossProcessGpuLease("0", rw, GpuFileLock("0", str(tmp_path)))
    other = GpuLease("0", rw)
    events = []

    def timing_run():
        with timing.exclusive():
            events.append("timing")
            assert not GpuFileLock("0", str(tmp_path)).try_hold()  # the file lock is this judge's now

    trainer = GpuFileLock("0", str(tmp_path))
    with trainer.hold(shared=True):
        thread = threading.Thread(target=timing_run)
        thread.start()
        time.sleep(0.2)  # the timing run is waiting on the file lock
        assert other.share() < 0.15  # another candidate's trial is not held back behind it
        events.append("trial")
        other.release()
    thread.join(5)
    assert events == ["trial", "timing"] and timing.waited_s >= 0.15


def test_a_timing_run_never_overlaps_another_candidates_gpu_work(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITONRL_TIMING_ON_CPU", "1")
    good, crash = (RUNTIME / "good_relu.py").read_text(), (RUNTIME / "os_exit.py").read_text()
    codes = [good, crash, good, good, f"# another\n{good}", good]
    config = VerifyConfig(device="cpu", workers=3, timeout_s=30, cache_dir=str(tmp_path), timed_trials=10,
                          timing_warmup_ms=0.0, warmup=2)
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(TASKS["relu"], code=c) for c in codes])
    assert [r.correct for r in results] == [c is not crash for c in codes], [(r.stage, r.error) for r in results]
    assert all(any(m == "exclusive" for m, _, _ in r.timing.get("gpu_lease", [])) for r in results if r.correct)
    timing_overlaps, shared_overlaps = _overlaps(results)
    assert timing_overlaps == 0
    assert shared_overlaps > 0  # correctness work of several candidates did run side by side
