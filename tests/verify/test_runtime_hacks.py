"""Each adversarial fixture in fixtures/runtime/ trips the runtime defence its ``# expect:`` header names.

The runtime path runs with static checks off, so every defence is shown to hold on its own; a second test runs
the full funnel (static checks on) and requires every hack to be rejected, by whichever stage comes first.
"""

import time
from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tritonrl.common.reward import compute_reward
from tritonrl.verify import Stage, VerifyItem

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "runtime").glob("*.py"))
HANG_TIMEOUT_S = 12.0


def header(path: Path, key: str) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{path.name} has no '# {key}:' header")


@pytest.fixture(scope="module")
def runtime_results(runtime_verifier):
    """All fixtures verified at once (in parallel), with static checks off."""
    items = [VerifyItem(TASKS[header(p, "task")], code=p.read_text()) for p in FIXTURES]
    start = time.monotonic()
    results = runtime_verifier.verify_many(items)
    return {p.name: r for p, r in zip(FIXTURES, results)}, time.monotonic() - start


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_runtime_defence(fixture, runtime_results):
    result = runtime_results[0][fixture.name]
    expected = header(fixture, "expect").split("|")
    if expected == ["done"]:
        assert result.correct and result.stage == Stage.DONE, result.error
        assert compute_reward(result) >= 1.0
        return
    assert not result.correct, f"{fixture.name} was accepted"
    assert compute_reward(result) == 0.0
    assert set(expected) & set(result.flags), f"{fixture.name}: flags {result.flags}, error {result.error}"
    assert result.error, "a rejected candidate gets a model-readable reason"


def test_hang_returns_within_timeout(runtime_results):
    result = runtime_results[0]["hang.py"]
    assert result.stage in (Stage.TINY, Stage.FULL)
    assert result.elapsed_s < HANG_TIMEOUT_S + 15


def test_verifier_survives_crashes(runtime_results, runtime_verifier):
    """After hangs, segfaults and os._exit, the same verifier still judges a good candidate correctly."""
    good = (Path(__file__).parent / "fixtures" / "runtime" / "good_relu.py").read_text()
    assert runtime_verifier.verify(TASKS["relu"], code=good).correct


def test_full_funnel_rejects_every_hack(verifier):
    bad = [p for p in FIXTURES if header(p, "expect") not in ("done", "timeout")]  # the hang: tested above
    items = [VerifyItem(TASKS[header(p, "task")], code=p.read_text()) for p in bad]
    for path, result in zip(bad, verifier.verify_many(items)):
        assert not result.correct, f"{path.name} passed the full funnel"
        assert compute_reward(result) == 0.0
