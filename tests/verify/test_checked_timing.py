"""The checked-timing path end to end on the CPU, through the ``TRITONRL_TIMING_ON_CPU`` test seam.

On a GPU the timed calls run on refreshed inputs and a few of their outputs go to the parent, which compares
them with the reference's for the same input set. The seam runs exactly that protocol with a wall clock, so the
plumbing (timing sets with their own references, captures, signed payloads, the parent's judgement, the speedup
interval) is tested here; the CUDA timer itself is tested by ``test_gpu_timing.py`` (``-m gpu``).
"""

from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier, VerifyItem

FIXTURES = Path(__file__).parent / "fixtures"
CHEATS = ["capped_speedup_9x.py", "data_ptr_memo.py", "mode_detect.py", "warm_shortcut.py"]  # CPU-visible ones
SHOWN_ON_SECOND_CALL = {"capped_speedup_9x.py", "data_ptr_memo.py", "warm_shortcut.py"}  # before any timing


@pytest.fixture(scope="module")
def timed_results(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TRITONRL_TIMING_ON_CPU", "1")
    paths = [FIXTURES / "runtime" / "good_relu.py"] + [FIXTURES / "gpu_timing" / name for name in CHEATS]
    config = VerifyConfig(device="cpu", timeout_s=60, workers=2, static_checks=False, timed_trials=12, warmup=2,
                          cache_dir=str(tmp_path_factory.mktemp("refcache")))
    try:
        with Verifier(config) as verifier:
            results = verifier.verify_many([VerifyItem(TASKS["relu"], code=p.read_text()) for p in paths])
    finally:
        mp.undo()
    return dict(zip([p.name for p in paths], results))


def test_honest_kernel_is_timed_with_an_interval(timed_results):
    result = timed_results["good_relu.py"]
    assert result.correct, result.error
    assert result.runtime_ms and result.runtime_ms > 0
    low, high = result.timing["speedup_ci95"]
    assert 0 < low <= result.speedup <= high
    assert result.timing["candidate"]["trials"] >= 10  # the adaptive protocol's minimum
    sets = result.timing["fresh_sets"]  # the first calls' inputs made before the GPU was held alone
    assert sets["made_before"] >= 10 and sets["made_during"] >= 0
    assert "timing_unresolved" not in result.flags and "timing_untrusted" not in result.flags
    hold = result.timing["candidate"]["hold"]  # the child's host time per timed call against the timer's hold
    assert hold["calls"] == result.timing["candidate"]["trials"] and hold["hold_ms"] == 0.0
    assert hold["over_hold"] == hold["calls"] and 0 < hold["host_median_ms"] <= hold["host_max_ms"]
    assert hold["tail_max_ms"] == 0.0 and hold["tails_over"] == 0  # no device: nothing trails a call


@pytest.mark.parametrize("name", CHEATS)
def test_timing_cheats_are_caught_on_their_timed_outputs(timed_results, name):
    """Caught on the timed calls' outputs, or before them by the first model's second call (state kept between
    calls: a persistent output buffer, a memo keyed on the data pointer)."""
    result = timed_results[name]
    assert not result.correct
    if name in SHOWN_ON_SECOND_CALL:
        assert "called a second time on new inputs" in result.error, (result.flags, result.error)
        return
    assert "timing_mismatch" in result.flags, (result.flags, result.error)
    assert "timed call" in result.error


RAISES_WHEN_TIMED = (FIXTURES / "runtime" / "good_relu.py").read_text().replace(
    "    def forward(self, x):\n",
    "    def forward(self, x):\n        if not torch.are_deterministic_algorithms_enabled():  # timing mode\n"
    "            raise RuntimeError('not now')\n", 1)


def test_failing_once_timed_is_not_correct(tmp_path, monkeypatch):
    """A candidate right on every trial that fails in its timed calls keeps no verdict: they were never checked."""
    assert RAISES_WHEN_TIMED.count("not now") == 1
    monkeypatch.setenv("TRITONRL_TIMING_ON_CPU", "1")
    config = VerifyConfig(device="cpu", timeout_s=60, workers=1, static_checks=False, timed_trials=12, warmup=2,
                          cache_dir=str(tmp_path))
    with Verifier(config) as verifier:
        result = verifier.verify(TASKS["relu"], code=RAISES_WHEN_TIMED)
    assert result.stage.value == "timing" and not result.correct, (result.stage, result.flags, result.error)
    assert "not now" in result.error
