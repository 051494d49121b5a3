"""Reward: a pure function from a ``VerifyResult`` to a float. Training and evaluation both use it.

Presets (``RewardConfig.preset``):

``correctness`` (default)
    reward = valid * correct * (1 + speedup_weight * speed_credit)
    Wrong kernels get 0: partial credit for wrong code invites reward hacking, so it is opt-in.

``staged`` (opt-in partial credit per funnel stage)
    0 invalid or static failure; compiled_credit (0.3) compiled; tiny_credit (0.5) tiny run passed;
    full_credit (0.7) full run passed; correct: full_credit + (1 - full_credit) * speed_credit.

Speed credit is noise-aware. The verifier reports the speedup with a 95% interval,
``VerifyResult.timing["speedup_ci95"] = [low, high]``; only the part of it that is surely above 1 counts:

    speed_credit = (min(low, max_speedup) - 1) / (max_speedup - 1)   when low > 1, else 0

So a kernel measured at 1.08x [0.97, 1.19] (indistinguishable from the reference) earns exactly what an equally
correct 0.95x [0.88, 1.02] kernel earns: nothing extra; 1.6x [1.5, 1.7] with ``max_speedup`` 2 earns 0.5.
Timing noise around 1.0 therefore never separates the samples of a GRPO group. The credit rises continuously
from 0 (no jump at low = 1 for noise to straddle) and is clipped at ``max_speedup``.
No speed credit, ever, when there is no interval (CPU, timing off, a verifier too old to report one: a bare
point speedup cannot say whether it is noise), when the result is not correct, or (by default) when it is
flagged ``SUSPICIOUS_SPEEDUP``.
"""

from __future__ import annotations

import math

from tritonrl.config import RewardConfig
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.verdict import VerifyResult

PRESETS = ("correctness", "staged")
SPEEDUP_CI_KEY = "speedup_ci95"  # VerifyResult.timing[SPEEDUP_CI_KEY] = [low, high], a 95% interval


def speedup_interval(result: VerifyResult) -> tuple[float, float] | None:
    """The speedup's 95% interval ``(low, high)`` from ``result.timing``, or None when absent or malformed."""
    interval = (result.timing or {}).get(SPEEDUP_CI_KEY)
    if not isinstance(interval, (list, tuple)) or len(interval) != 2:
        return None
    low, high = interval
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in interval):
        return None
    return (float(low), float(high)) if low <= high else None


# Flags under which a runtime is not a measurement to reward, whatever interval came with it.
NO_SPEED_CREDIT = (Flag.TIMING_UNTRUSTED.value, Flag.TIMING_UNRESOLVED.value)


def speedup_credit(result: VerifyResult, config: RewardConfig) -> float:
    """In [0, 1]: how far the speedup's 95% lower bound is above 1, relative to ``max_speedup``.

    0 when there is no interval, when the interval reaches down to 1 or below, when the timing is untrusted (the
    candidate's clock disagreed with the judge's) or unresolved (a runtime below the timer's resolution), or (by
    default) when the result is flagged as suspicious.
    """
    interval = speedup_interval(result)
    if interval is None or interval[0] <= 1.0:
        return 0.0
    if any(flag in result.flags for flag in NO_SPEED_CREDIT):
        return 0.0
    if config.withhold_suspicious_speedup and Flag.SUSPICIOUS_SPEEDUP.value in result.flags:
        return 0.0
    return (min(interval[0], config.max_speedup) - 1.0) / (config.max_speedup - 1.0)


def compute_reward(result: VerifyResult, config: RewardConfig | None = None) -> float:
    config = config or RewardConfig()
    if config.preset == "correctness":
        if not (result.valid and result.correct):
            return 0.0
        return 1.0 + config.speedup_weight * speedup_credit(result, config)
    if config.preset == "staged":
        if not result.valid:
            return 0.0
        if result.correct:
            return config.full_credit + (1.0 - config.full_credit) * speedup_credit(result, config)
        if result.tiny_correct:
            return config.tiny_credit
        if result.compiled:
            return config.compiled_credit
        return 0.0
    raise ValueError(f"unknown reward preset {config.preset!r}; choose one of {PRESETS}")
