"""The timing protocol's CPU-checkable parts: statistics, bound timers, the reward switch, the timing fixtures'
static rejection. The measurements themselves need a GPU: ``tests/verify/test_gpu.py``."""

import statistics
from pathlib import Path

import pytest
import torch

from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.reward import compute_reward
from tritonrl.verify import Flag, Stage, VerifyResult, timing
from tritonrl.verify.static import run_static_checks
from tritonrl.verify.trial import TrialSpec
from tritonrl.verify.verifier import reference_timing_key, timing_summary

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"


def test_summarize_reports_median_trimmed_mean_and_spread():
    times = [1.0 + 0.01 * k for k in range(19)] + [50.0]  # one outlier, as a GC pause or a context switch gives
    stats = timing.summarize(times)
    assert stats["median_ms"] == pytest.approx(statistics.median(times))
    assert stats["trimmed_mean_ms"] == pytest.approx(statistics.fmean(sorted(times)[2:-2]))
    assert stats["trimmed_mean_ms"] < 1.2 < stats["mean_ms"]  # the outlier moves the mean, not the trimmed mean
    assert stats["p10_ms"] < stats["median_ms"] < stats["p90_ms"] <= stats["max_ms"] == 50.0
    assert stats["cv"] == pytest.approx(stats["std_ms"] / stats["mean_ms"])
    assert stats["trials"] == 20


def test_summarize_of_one_trial_has_no_spread():
    stats = timing.summarize([2.5])
    assert stats["median_ms"] == stats["p10_ms"] == stats["p90_ms"] == 2.5 and stats["std_ms"] == 0.0


def test_timers_are_bound_before_candidate_code(monkeypatch):
    """What a candidate replaces after import (module or class attributes) is not what timing calls."""
    original_record, original_elapsed = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
    monkeypatch.setattr(torch.cuda, "Event", object)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: None)
    assert timing._Event is not object and timing._synchronize is not torch.cuda.synchronize
    assert timing._event_record is original_record and timing._event_elapsed is original_elapsed
    assert timing._current_stream is not torch.cuda.current_stream


@pytest.mark.parametrize(("withhold", "bonus"), [(True, False), (False, True)])
def test_reward_switch_for_suspicious_speedups(withhold, bonus):
    result = VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                          speedup=50.0, flags=[Flag.SUSPICIOUS_SPEEDUP.value])
    config = RewardConfig(withhold_suspicious_speedup=withhold)
    expected = 1.0 + (config.speedup_weight if bonus else 0.0)
    assert compute_reward(result, config) == pytest.approx(expected)
    assert compute_reward(result, RewardConfig(preset="staged", withhold_suspicious_speedup=withhold)) == (
        pytest.approx(1.0 if bonus else 0.7))


@pytest.mark.parametrize(("name", "flag"), [("side_stream_early_return.py", Flag.THREADS),
                                            ("timer_patch.py", Flag.TAMPERING)])
def test_timing_hacks_are_rejected_statically(name, flag):
    flags = {v.flag for v in run_static_checks((RUNTIME / name).read_text())}
    assert flag in flags


def test_reference_timing_key_depends_on_gpu_and_protocol():
    trial = TrialSpec("full0", "full", "bundled/t@base:0", "src", 42)
    base = reference_timing_key(trial, "NVIDIA H100", VerifyConfig())
    assert base != reference_timing_key(trial, "NVIDIA H200", VerifyConfig())
    assert base != reference_timing_key(trial, "NVIDIA H100", VerifyConfig(timed_trials=50))
    assert base != reference_timing_key(trial, "NVIDIA H100", VerifyConfig(compile_baseline=True))


def test_timing_summary_reports_both_sides_and_a_missing_reference():
    stats = timing.summarize([1.0, 1.1, 0.9])
    status = {"timing": stats, "device": {"gpu": "G", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
                                          "trials_peak_memory_bytes": 123}}
    summary = timing_summary(status, {"ok": True, "reference": stats, "compile": stats}, ref_cached=True)
    assert summary["gpu"] == "G" and summary["ref_median_ms"] == stats["median_ms"]
    assert summary["ref_compile_ms"] == stats["median_ms"] and summary["peak_memory_bytes"] == 123
    assert "reference_error" in timing_summary(status, {"ok": False, "error": "boom"}, ref_cached=False)
