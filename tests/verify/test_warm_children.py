"""Children started ahead of their candidates (``VerifyConfig.warm_children``, off by default; here on the CPU):
``start(wait=True)`` returns with one started child per place, each candidate gets one, each verdict is what a
child started for it would give, every place gets a new one after its verdict, and ``close()`` ends them all."""

import os
import time
from contextlib import contextmanager
from pathlib import Path

from tests.verify.tasks import TASKS
from tritonrl.config import VerifyConfig
from tritonrl.verify import Flag, Verifier, VerifyItem
from tritonrl.verify.zygote import CANDIDATE_NICE

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie not yet reaped counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_children_started_ahead_judge_their_candidates_and_end_with_the_verifier(ref_cache_dir):
    good = (RUNTIME / "good_relu.py").read_text()
    broken = good.replace("def forward", "def forward_missing")
    config = VerifyConfig(static_checks=False, cache_dir=ref_cache_dir, device="cpu", workers=2, timeout_s=12.0,
                          warm_children=True)
    verifier = Verifier(config)
    later: list[int] = []
    try:
        verifier.start(wait=True)
        waiting = verifier._warm.drain()
        assert len(waiting) == 2 and all(s.judge.wait_ready(s.key, 0) for s in waiting)  # CUDA (here: all) started
        for started in waiting:
            verifier._warm.put(started)
        pids = [s.child.pid for s in waiting]
        assert all(os.getpriority(os.PRIO_PROCESS, p) == min(19, os.nice(0) + CANDIDATE_NICE) for p in pids)
        items = [VerifyItem(TASKS["relu"], code=good), VerifyItem(TASKS["relu"], code=broken),
                 VerifyItem(TASKS["relu"], code=good)]
        first, second, third = verifier.verify_many(items)
        assert first.correct and third.correct, (first.error, third.error)
        assert not second.correct and second.error
        assert first.timing["warm_child"] and second.timing["warm_child"]  # the two started ahead
        deadline = time.monotonic() + 10
        while verifier._warm.count("cpu") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert verifier._warm.count("cpu") == 2  # a place's new child once each verdict is in, at most one a place
        assert not any(_alive(p) for p in pids)  # the ones used are gone
        refilled = verifier._warm.drain()
        later = [s.child.pid for s in refilled]
        assert all(_alive(p) for p in later)
        for started in refilled:
            verifier._warm.put(started)
    finally:
        verifier.close()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in later) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert later and not any(_alive(p) for p in later)  # close() ended the children waiting


@contextmanager
def _one_place(cache: str):
    """A verifier with one place, started, and the child it started ahead (left in its pool)."""
    config = VerifyConfig(static_checks=False, cache_dir=cache, device="cpu", workers=1, timeout_s=12.0,
                          warm_children=True)
    with Verifier(config) as verifier:
        verifier.start(wait=True)
        (started,) = verifier._warm.drain()
        verifier._warm.put(started)
        yield verifier, started


def test_a_warm_child_of_a_judge_that_died_is_not_used(ref_cache_dir):
    """A child whose session is with a judge that is gone is finished and replaced by a fresh start."""
    with _one_place(ref_cache_dir) as (verifier, old):
        verifier._drop_judge("cpu")  # the judge ends: its sessions with it
        result = verifier.verify(TASKS["relu"], code=(RUNTIME / "good_relu.py").read_text())
        assert result.correct, result.error
        assert result.timing["warm_child"] is False
        assert Flag.VERIFIER_ERROR.value not in result.flags
        assert not _alive(old.child.pid)


def test_a_warm_child_that_died_waiting_is_not_a_candidates_verdict(ref_cache_dir):
    """A child started ahead that dies before its candidate comes (killed, out of memory) ends its session: the
    candidate gets a child of its own, not that death as its verdict."""
    import signal

    with _one_place(ref_cache_dir) as (verifier, old):
        os.killpg(old.child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while old.child.exit() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert old.child.exit() is not None
        result = verifier.verify(TASKS["relu"], code=(RUNTIME / "good_relu.py").read_text())
        assert result.correct, result.error
        assert result.timing["warm_child"] is False


def test_a_late_report_of_a_dead_judge_leaves_the_judge_started_after_it(ref_cache_dir):
    """Two candidates in flight lose the same judge; the first's retry starts a new one before the second reports
    the death. That late report ends only the dead judge: the retry's session, on the new one, is judged (the race
    behind a lost request in ``tests/serve/test_verdicts.py``)."""
    import signal

    with _one_place(ref_cache_dir) as (verifier, _):
        dead = verifier._judge_for("cpu")
        os.kill(dead.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while dead.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not dead.alive
        verifier._drop_judge("cpu", dead)  # the first candidate's report
        successor = verifier._judge_for("cpu")  # its retry's judge
        assert successor is not dead
        verifier._drop_judge("cpu", dead)  # the second candidate's report, later
        assert verifier._judges["cpu"] is successor and successor.alive
        result = verifier.verify(TASKS["relu"], code=(RUNTIME / "good_relu.py").read_text())
        assert result.correct, result.error


def test_spares_started_while_a_batch_runs_give_every_candidate_a_started_child(ref_cache_dir):
    """``warm_spares``: each child a candidate takes is replaced at once, so the later candidates of a batch find one
    too (without it, a place's next candidate starts its own while the batch runs); at most one waits a place."""
    good = (RUNTIME / "good_relu.py").read_text()
    config = VerifyConfig(static_checks=False, cache_dir=ref_cache_dir, device="cpu", workers=2, timeout_s=12.0,
                          warm_children=True, warm_spares=True)
    with Verifier(config) as verifier:
        verifier.start(wait=True)
        results = verifier.verify_many([VerifyItem(TASKS["relu"], code=good) for _ in range(4)])
        assert all(r.correct for r in results), [r.error for r in results]
        assert [r.timing["warm_child"] for r in results] == [True] * 4
        assert verifier._warm.count("cpu") <= 2
