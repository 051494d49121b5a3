"""Metrics against hand-computed cases: rates, unbiased pass@k, fast_p, geometric-mean speedup, breakdowns."""

import math

import pytest

from tritonrl.evaluation import metrics
from tritonrl.evaluation.metrics import Sample
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult


def correct(speedup=None, flags=()):
    return VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                        speedup=speedup, runtime_ms=None if speedup is None else 1.0, flags=list(flags))


def wrong():
    return VerifyResult(stage=Stage.FULL, valid=True, compiled=True, tiny_correct=True,
                        flags=[Flag.OUTPUT_MISMATCH.value])


def unparsable():
    return VerifyResult(stage=Stage.EXTRACT, flags=[Flag.NO_CODE.value])


def hacked():
    return VerifyResult(stage=Stage.STATIC, flags=[Flag.TORCH_COMPUTE.value])


def samples(task, level, results):
    return [Sample(task, level, r, i) for i, r in enumerate(results)]


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 2, 1, 2 / 5),
    (5, 2, 2, 1 - 3 / 10),          # 1 - C(3,2)/C(5,2)
    (10, 3, 5, 1 - 21 / 252),       # 1 - C(7,5)/C(10,5)
    (5, 0, 3, 0.0),
    (5, 4, 2, 1.0),                 # n - c < k: every pair holds a correct one
    (1, 1, 1, 1.0),
])
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert metrics.pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_matches_binomial_formula_on_a_grid():
    for n in range(1, 13):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - math.comb(n - c, k) / math.comb(n, k)
                assert metrics.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


def test_pass_at_k_stable_for_large_n():
    # C(1000, 500) overflows a float; the product form does not.
    assert 0.0 < metrics.pass_at_k(1000, 1, 500) == pytest.approx(0.5)


def test_pass_at_k_rejects_impossible_inputs():
    with pytest.raises(ValueError):
        metrics.pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        metrics.pass_at_k(3, 1, 4)


def test_suite_pass_at_k_averages_tasks_and_refuses_short_tasks():
    data = samples("a", 1, [correct(), wrong()]) + samples("b", 1, [wrong(), wrong()])
    assert metrics.suite_pass_at_k(data, 1) == pytest.approx((0.5 + 0.0) / 2)
    assert metrics.suite_pass_at_k(data, 2) == pytest.approx((1.0 + 0.0) / 2)
    assert metrics.suite_pass_at_k(data, 3) is None


def test_rates_are_shares_of_all_samples():
    data = samples("a", 1, [correct(), wrong(), unparsable(), hacked()])
    r = metrics.rates(data)
    assert r == {"format_rate": 0.75, "valid_rate": 0.5, "compiled_rate": 0.5, "tiny_rate": 0.5,
                 "correct_rate": 0.25}


def test_fast_p_per_task_average_hand_computed():
    # Task a: one correct at 1.2x, one wrong. Task b: correct at 2.5x and at 0.8x.
    data = samples("a", 1, [correct(1.2), wrong()]) + samples("b", 2, [correct(2.5), correct(0.8)])
    got = metrics.fast_ps(data)
    assert got["fast_0"] == pytest.approx((0.5 + 1.0) / 2)
    assert got["fast_1"] == pytest.approx((0.5 + 0.5) / 2)
    assert got["fast_1.5"] == pytest.approx((0.0 + 0.5) / 2)
    assert got["fast_2"] == pytest.approx((0.0 + 0.5) / 2)


def test_fast_p_is_unavailable_not_zero_without_timing():
    data = samples("a", 1, [correct(), wrong()])
    got = metrics.fast_ps(data)
    assert got["fast_0"] == pytest.approx(0.5)
    assert got["fast_1"] is None and got["fast_1.5"] is None and got["fast_2"] is None
    assert metrics.geomean_speedup(data) is None


def test_fast_p_withholds_suspicious_and_untimed_correct_samples_when_timed():
    data = samples("a", 1, [correct(50.0, flags=[Flag.SUSPICIOUS_SPEEDUP.value]), correct(3.0), correct()])
    assert metrics.fast_p(data, 1.0) == pytest.approx(1 / 3)
    assert metrics.fast_p(data, 0.0) == pytest.approx(1.0)


def test_geomean_speedup():
    data = samples("a", 1, [correct(2.0), correct(0.5), wrong()])
    assert metrics.geomean_speedup(data) == pytest.approx(1.0)
    data = samples("a", 1, [correct(2.0), correct(8.0)])
    assert metrics.geomean_speedup(data) == pytest.approx(4.0)


def test_failure_breakdown_and_funnel():
    timing_skipped = VerifyResult(stage=Stage.TIMING, valid=True, compiled=True, tiny_correct=True, correct=True,
                                  flags=[Flag.TIMING_UNAVAILABLE.value])
    data = samples("a", 1, [correct(), wrong(), unparsable(), hacked(), hacked(), timing_skipped])
    fails = metrics.failure_breakdown(data)
    assert fails["by_stage"] == {"static": 2, "full": 1, "extract": 1}
    assert fails["by_flag"] == {"torch_compute": 2, "output_mismatch": 1, "no_code": 1}
    assert metrics.stage_funnel(data) == {"samples": 6, "format": 5, "valid": 3, "compiled": 3, "tiny": 3,
                                          "correct": 2}


def test_per_level_and_per_task():
    data = samples("a", 1, [correct(), wrong()]) + samples("b", 2, [unparsable(), unparsable()])
    levels = metrics.per_level(data, ks=(1, 2))
    assert levels["1"]["correct_rate"] == 0.5 and levels["2"]["format_rate"] == 0.0
    assert levels["1"]["pass_at_k"]["pass@2"] == 1.0
    tasks = metrics.per_task(data, ks=(1,))
    assert tasks["a"]["n_correct"] == 1 and tasks["a"]["top_failure"] == "full"
    assert tasks["b"]["n_format"] == 0 and tasks["b"]["top_failure"] == "extract"


def test_summary_of_nothing_is_none_not_zero():
    s = metrics.summarize([])
    assert s["n_samples"] == 0 and s["correct_rate"] is None and s["fast_p"]["fast_0"] is None


def test_cpu_size_limit_is_its_own_category_and_reduced_shapes_is_not_a_failure():
    size_limited = VerifyResult(stage=Stage.FULL, valid=True, compiled=True, tiny_correct=True,
                                flags=[Flag.REDUCED_SHAPES.value, Flag.TIMEOUT.value, Flag.CPU_SIZE_LIMIT.value])
    data = [Sample("a", 2, correct(flags=[Flag.REDUCED_SHAPES.value, Flag.TIMING_UNAVAILABLE.value])),
            Sample("a", 2, wrong()), Sample("b", 2, size_limited)]
    fails = metrics.failure_breakdown(data)
    assert fails["by_stage"] == {"full": 1, "cpu_size_limit": 1}
    assert fails["by_flag"] == {"output_mismatch": 1, "timeout": 1, "cpu_size_limit": 1}
    summary = metrics.summarize(data)
    assert summary["n_reduced_shapes"] == 2 and summary["n_cpu_size_limit"] == 1
    assert metrics.per_task(data)["b"]["top_failure"] == "cpu_size_limit"


def test_a_declined_sample_is_neither_correct_nor_wrong():
    declined = VerifyResult(stage=Stage.FULL, valid=True, compiled=True, tiny_correct=True, correct=None,
                            flags=[Flag.DECLINED.value], declined="not judged on this CPU: ...")
    group = samples("t", 3, [correct(), wrong(), declined])
    assert metrics.is_declined(declined) and not metrics.is_declined(wrong())
    assert metrics.judged(group) == group[:2]
    assert metrics.suite_pass_at_k(group, 1) == pytest.approx(1 / 3)  # on its own a declined one counts as not correct
    assert metrics.summarize(metrics.judged(group))["correct_rate"] == 0.5  # what reports compute: judged samples
