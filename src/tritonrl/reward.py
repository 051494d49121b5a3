"""Reward: a pure function from a ``VerifyResult`` to a float. Training and evaluation both use it.

Presets (``RewardConfig.preset``):

``correctness`` (default)
    reward = valid * correct * (1 + speedup_weight * min(speedup, max_speedup) / max_speedup)
    Wrong kernels get 0: partial credit for wrong code invites reward hacking, so it is opt-in.

``staged`` (opt-in partial credit per funnel stage)
    0 invalid or static failure; compiled_credit (0.3) compiled; tiny_credit (0.5) tiny run passed;
    full_credit (0.7) full run passed; when timed, full_credit + (1 - full_credit) * min(speedup / max_speedup, 1).

A speedup flagged as suspicious (``VerifyConfig.suspicious_speedup``) earns no speedup credit while
``RewardConfig.withhold_suspicious_speedup`` is on (the default). A missing speedup (CPU, timing off) earns none.
"""

from __future__ import annotations

from tritonrl.config import RewardConfig
from tritonrl.verify.flags import Flag
from tritonrl.verify.result import VerifyResult

PRESETS = ("correctness", "staged")


def speedup_credit(result: VerifyResult, config: RewardConfig) -> float:
    """min(speedup, max_speedup) / max_speedup in [0, 1]; 0 when untimed or (by default) flagged as suspicious."""
    if result.speedup is None:
        return 0.0
    if config.withhold_suspicious_speedup and Flag.SUSPICIOUS_SPEEDUP.value in result.flags:
        return 0.0
    return max(0.0, min(result.speedup, config.max_speedup)) / config.max_speedup


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
