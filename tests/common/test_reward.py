"""The reward's speed term is noise-aware: only the part of the speedup's 95% interval above 1 earns credit."""

import random

import pytest

from tritonrl.common.reward import compute_reward, speedup_credit, speedup_interval
from tritonrl.config import RewardConfig
from tritonrl.verify import Flag, Stage, VerifyResult


def correct(speedup=None, ci=None, flags=()) -> VerifyResult:
    timing = {"speedup_ci95": ci} if ci is not None else {}
    return VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                        speedup=speedup, timing=timing, flags=list(flags))


@pytest.mark.parametrize(("ci", "credit"), [
    ([0.9, 1.2], 0.0),     # contains 1: indistinguishable from the reference
    ([0.7, 0.9], 0.0),     # surely slower: no penalty beyond "no credit" (correctness is what is rewarded)
    ([1.0, 1.4], 0.0),     # touches 1
    ([1.5, 1.7], 0.5),     # (1.5 - 1) / (2 - 1)
    ([1.2, 1.3], 0.2),
    ([3.0, 3.5], 1.0),     # clipped at max_speedup
])
def test_credit_comes_from_the_lower_bound_above_one(ci, credit):
    assert speedup_credit(correct(sum(ci) / 2, ci), RewardConfig()) == pytest.approx(credit)
    assert compute_reward(correct(sum(ci) / 2, ci)) == pytest.approx(1.0 + 0.3 * credit)


def test_no_interval_no_speed_credit():
    """A bare point speedup (CPU, timing off, a verifier without intervals) cannot tell noise from speed."""
    assert compute_reward(correct(speedup=1.8)) == 1.0
    assert compute_reward(correct(speedup=1.8), RewardConfig(preset="staged")) == pytest.approx(0.7)


@pytest.mark.parametrize("ci", [[1.2], "1.2,1.4", [float("nan"), 2.0], [1.5, 1.2], [True, 2.0], None])
def test_malformed_intervals_are_no_interval(ci):
    result = correct(speedup=1.3, ci=ci)
    assert speedup_interval(result) is None and compute_reward(result) == 1.0


def test_suspicious_speedup_still_withheld():
    result = correct(50.0, [45.0, 55.0], flags=[Flag.SUSPICIOUS_SPEEDUP.value])
    assert compute_reward(result) == 1.0
    assert compute_reward(result, RewardConfig(withhold_suspicious_speedup=False)) == pytest.approx(1.3)
    assert compute_reward(result, RewardConfig(preset="staged", withhold_suspicious_speedup=False)) == 1.0


@pytest.mark.parametrize("flag", [Flag.TIMING_UNTRUSTED, Flag.TIMING_UNRESOLVED])
def test_untrusted_or_unresolved_timing_earns_no_speed_credit(flag):
    """Whatever interval came with it: a clock the judge's wall clock contradicts, or a runtime below the timer's
    resolution (a median of 0 once its cost is taken off), is not a speedup to reward."""
    result = correct(2.0, [1.8, 2.2], flags=[flag.value])
    assert speedup_credit(result, RewardConfig()) == 0.0
    assert compute_reward(result) == 1.0 and compute_reward(correct(2.0, [1.8, 2.2])) > 1.0


def test_wrong_kernels_earn_nothing_for_speed():
    fast_but_wrong = VerifyResult(Stage.FULL, valid=True, compiled=True, tiny_correct=True, correct=False,
                                  speedup=3.0, timing={"speedup_ci95": [2.8, 3.2]})
    assert compute_reward(fast_but_wrong) == 0.0
    assert compute_reward(fast_but_wrong, RewardConfig(preset="staged")) == 0.5


@pytest.mark.parametrize("preset", ["correctness", "staged"])
def test_identical_correct_kernels_get_identical_rewards(preset):
    config = RewardConfig(preset=preset)
    untimed = {compute_reward(correct(), config) for _ in range(8)}
    timed = {compute_reward(correct(1.05, [0.96, 1.14]), config) for _ in range(8)}
    assert len(untimed) == 1 and len(timed) == 1 and untimed == timed


@pytest.mark.parametrize("preset", ["correctness", "staged"])
def test_timing_noise_around_one_yields_no_reward_differences(preset):
    """One kernel as fast as the reference, timed 200 times: point speedups scatter 0.85..1.15 and would have
    spread the old reward over 0.04 (enough for group-std scaling to turn into +-1 advantages); intervals that
    contain 1 give every sample the same reward, so a GRPO group sees no difference at all."""
    rng = random.Random(0)
    config = RewardConfig(preset=preset)
    rewards = set()
    points = []
    for _ in range(200):
        point = 1.0 + rng.uniform(-0.15, 0.15)
        half = abs(point - 1.0) + rng.uniform(0.01, 0.1)  # an honest interval around a null effect covers 1
        points.append(point)
        rewards.add(compute_reward(correct(point, [point - half, point + half]), config))
    assert max(points) - min(points) > 0.25
    assert rewards == {compute_reward(correct(), config)}
