"""Timing inside a busy batch (issue 38, item 3; docs/timing_protocol.md, "Timing inside a busy batch"), on a fake timer.

Other work on the GPU only adds to an empty region. A burst of it while the empty regions are timed used to make
their median (subtracted from every call) exceed a 0.2 ms kernel's raw time: every trial clipped to 0,
``runtime_ms 0.0``, ``timing_unresolved``. The empty regions are now also taken among the timed calls and a low
quantile of the quieter window is subtracted; alone, the figure moves only by noise.
"""

import random
import statistics

import pytest

from tritonrl.verify.judge.timing_run import RESOLUTION_MS, unresolved_reason
from tritonrl.verify.shared import timing_protocol

BASE_MS = 0.02     # the protocol's own cost (sync wake-up, end event)
KERNEL_MS = 0.20   # an honest memory-bound kernel (l1_leaky_relu, l1_softmax: 0.18-0.29 ms)
BUSY_MS = 0.50     # what another context's work adds to an empty region while it runs


class Device:
    """Empty regions and calls on a fake device: ``busy(k)`` says whether the k-th empty region met other work."""

    def __init__(self, busy=lambda k: False, noise=0.0, seed=0):
        self.busy, self.noise, self.rng = busy, noise, random.Random(seed)
        self.empties = 0

    def jitter(self, ms):
        return ms * (1 + self.noise * self.rng.gauss(0, 1))

    def empty(self):
        self.empties += 1
        return self.jitter(BASE_MS) + (BUSY_MS if self.busy(self.empties) else 0.0)

    def call(self, warm):
        return self.jitter(KERNEL_MS) + self.jitter(BASE_MS)


def test_a_burst_during_the_calibration_does_not_zero_a_short_kernel():
    device = Device(busy=lambda k: k <= 20)  # the whole calibration window met another context's work
    stats = timing_protocol.time_calls(device.call, overhead=device.empty)
    assert stats["median_ms"] == pytest.approx(KERNEL_MS)  # was 0.0: every trial clipped (median 0.52 subtracted)
    facts = stats["overhead"]
    assert facts["calibration_median_ms"] == pytest.approx(BASE_MS + BUSY_MS)
    assert facts["during_median_ms"] == pytest.approx(BASE_MS) and facts["during_n"] >= 5
    assert facts["min_ms"] == pytest.approx(BASE_MS) and len(facts["at_s"]) == 2


def test_a_burst_among_the_calls_does_not_move_the_subtracted_cost():
    device = Device(busy=lambda k: k > 20)
    stats = timing_protocol.time_calls(device.call, overhead=device.empty)
    assert stats["overhead_ms"] == pytest.approx(BASE_MS) and stats["median_ms"] == pytest.approx(KERNEL_MS)


def test_the_callers_interleaved_empty_regions_are_used():
    """The judge's candidate path: the clock check's matched empty regions are the interleaved samples."""
    device = Device(busy=lambda k: True)
    matched = [BASE_MS] * 10
    stats = timing_protocol.time_calls(device.call, overhead=device.empty, interleaved=lambda: matched)
    assert device.empties == 20  # the calibration only: time_calls makes none of its own
    assert stats["overhead_ms"] == pytest.approx(BASE_MS) and stats["overhead"]["during_n"] == 10


@pytest.mark.parametrize("seed", range(5))
def test_alone_the_figure_moves_only_by_noise(seed):
    """An honest kernel timed alone: the new figure against the old one (the calibration's median subtracted)."""
    device = Device(noise=0.05, seed=seed)
    stats = timing_protocol.time_calls(device.call, overhead=device.empty)
    calibration_median = stats["overhead"]["calibration_median_ms"]
    raw = [s + stats["overhead_ms"] for s in stats["samples_ms"]]
    old = statistics.median(max(t - calibration_median, 0.0) for t in raw)
    assert abs(stats["median_ms"] - old) / old < 0.01  # 5% jitter on a 0.02 ms cost: < 1% of a 0.2 ms kernel
    lo, hi = stats["median_ci_ms"]
    assert lo - 0.01 * old <= old <= hi + 0.01 * old


def test_an_unresolved_median_says_why():
    busy = {"raw_median_ms": 0.22, "overhead_ms": 0.52, "overhead": {"min_ms": 0.02}}
    short = {"raw_median_ms": 0.0205, "overhead_ms": 0.0203, "overhead": {"min_ms": 0.0200}}
    assert unresolved_reason(busy).startswith("overhead_dominated")
    assert RESOLUTION_MS > 0.0205 - 0.0200 and unresolved_reason(short).startswith("too_short")
    assert unresolved_reason({}) == "no_figures"


def test_the_wait_for_a_cuda_start_turn_is_not_charged_to_the_candidate():
    """``Session.start_cuda``: the wait for the judge's CUDA-start turn (other children of a loaded batch starting)
    is recorded but leaves the child's budget whole; the start itself (the child's answer) is charged. Charged, the
    wait timed out three honest GEMMs of a 48-candidate batch on a loaded H200 host (20 s limit, 9-14 s waiting)."""
    import threading
    import time

    from tritonrl.verify.judge.session import Session

    turns = threading.Semaphore(1)
    turns.acquire()  # another child starting
    threading.Timer(0.3, turns.release).start()
    sent = []
    session = object.__new__(Session)
    session.judge = type("Judge", (), {"cuda_starts": turns})()
    session.facts, session.budget_s = {"stage_s": {}}, 20.0
    session.send = sent.append

    def recv(stage):
        time.sleep(0.05)  # the child's own start
        session.budget_s -= 0.05
        return {"op": "ready"}

    session.recv = recv
    assert session.start_cuda("compile") == {"op": "ready"}
    assert sent == [{"op": "start"}]
    assert session.facts["stage_s"]["start_wait"] >= 0.25
    assert session.budget_s == pytest.approx(19.95)

