"""Study two's registered rules (benchmarks/studies/study2_criterion.py): S* and SFT_best, the futility rule, the edge
screen and the stream's order, the steps and the equal verifier budget, the rate check, the criterion's
hypotheses, Holm's secondary comparison and the power figure from study one's committed counts."""

import json
import random
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "studies"))

import study2_criterion as reg  # noqa: E402


def score(step, p1, p16):
    return {"step": step, "pass_at_1": p1, "pass_at_16": p16, "headroom": p16 - p1}


def test_s_star_is_the_most_headroom_within_three_points_of_the_best_pass_at_1():
    scores = [score(300, 0.30, 0.60), score(400, 0.44, 0.60), score(500, 0.46, 0.58), score(600, 0.47, 0.52),
              score(700, 0.45, 0.50)]
    choice = reg.select_start(scores)
    assert choice["sft_best"] == 600  # the best pass@1
    # 300 has the most headroom (0.30) but is 17 points below the best; among 400..700 (>= 0.44), 400 has 0.16
    assert choice["s_star"] == 400 and choice["headroom_val"] == pytest.approx(0.16)
    assert not choice["futile"]


def test_ties_go_to_the_better_pass_at_1_then_the_earlier_step():
    assert reg.select_start([score(300, 0.40, 0.50), score(400, 0.42, 0.52)])["s_star"] == 400
    assert reg.select_start([score(300, 0.40, 0.50), score(400, 0.40, 0.50)])["s_star"] == 300
    assert reg.select_start([score(300, 0.40, 0.50), score(400, 0.40, 0.50)])["sft_best"] == 300


def test_the_futility_rule_stops_a_study_with_under_eight_points_of_headroom():
    assert reg.select_start([score(300, 0.50, 0.579)])["futile"]
    assert not reg.select_start([score(300, 0.50, 0.58)])["futile"]


def test_checkpoint_scores_read_pass_at_1_and_16_from_counts():
    rows = reg.checkpoint_scores({300: {"a": (0, 16), "b": (8, 16), "c": (16, 16)}})
    assert rows[0]["pass_at_1"] == pytest.approx(0.5) and rows[0]["pass_at_16"] == pytest.approx(2 / 3)


def test_the_edge_is_one_to_three_right_of_four_in_stream_order():
    counts = {"a": (0, 4), "b": (1, 4), "c": (3, 4), "d": (4, 4), "e": (2, 4)}
    assert reg.edge(counts) == {"b", "c", "e"}
    assert reg.stream_edge(["e", "a", "c", "d", "b"], counts) == ["e", "c", "b"]
    with pytest.raises(ValueError, match="other than 4"):
        reg.edge({"a": (1, 8)})


def test_steps_use_each_edge_prompt_once_and_stop_at_the_cap():
    assert reg.rl_steps(100) == 3 and reg.rl_steps(31) == 0 and reg.rl_steps(10_000) == reg.STEP_CAP


def test_every_verifier_arm_gets_the_same_calls_and_sft_plus_none():
    steps = reg.rl_steps(2000)
    calls = {arm: reg.verifier_calls(arm, steps) for arm in ("grpo_s0", "grpo_s1", "control_s0", "rloo", "bon",
                                                              "sftplus")}
    assert calls["grpo_s0"] == steps * 32 * 8 and calls["sftplus"] == 0
    assert reg.equal_budget(calls)
    assert not reg.equal_budget({**calls, "bon": calls["bon"] - 8})
    with pytest.raises(ValueError):
        reg.verifier_calls("ppo", steps)


def test_the_rate_check_picks_the_best_validation_pass_at_1_ties_to_the_lower_rate():
    assert reg.pick_learning_rate({1e-5: 0.40, 3e-5: 0.45, 1e-4: 0.43}) == 3e-5
    assert reg.pick_learning_rate({1e-5: 0.45, 3e-5: 0.45, 1e-4: 0.43}) == 1e-5
    assert reg.rate_check_prompts(500, 256) == 256 and reg.rate_check_prompts(100, 256) == 100
    assert reg.rate_check_prompts(31, 256) == 0  # under one step's prompts: the default rate


def arms(effect: float, control_effect: float = 0.0, tasks: int = 300, seed: int = 0):
    """Per-task rates where GRPO adds ``effect`` to SFT's rate on every task (clipped to [0, 1])."""
    rng = random.Random(seed)
    base = {f"t{i}": rng.random() * 0.8 for i in range(tasks)}

    def shifted(d):
        return {t: min(1.0, max(0.0, v + d + rng.gauss(0, 0.02))) for t, v in base.items()}

    rates = {"sft_star": base, "grpo_s0": shifted(effect), "grpo_s1": shifted(effect),
             "control_s0": shifted(control_effect), "sft_best@best": base, "grpo_s0@best": shifted(effect),
             "grpo_s1@best": shifted(effect)}
    cluster = {t: f"c{int(t[1:]) // 2}" for t in base}  # two tasks an op combination
    return rates, cluster


def test_a_clear_gain_meets_every_hypothesis_and_none_meets_none():
    rates, cluster = arms(0.05, control_effect=-0.01)
    f = reg.figures(rates, cluster, resamples=2000)
    assert reg.hypotheses(f, headroom_val=0.20) == {"H1": True, "H2": True, "H3": True}
    assert reg.criterion_met(f, 0.20)
    assert not reg.hypotheses(f, headroom_val=0.30)["H1"]  # 5 points close less than 20% of 30
    rates, cluster = arms(0.0)
    f = reg.figures(rates, cluster, resamples=2000)
    assert not any(reg.hypotheses(f, 0.20).values())


def test_holm_names_a_winner_only_above_every_other_arm():
    rates, cluster = arms(0.0)
    base = rates["sft_star"]
    flat = {"grpo_s0": base, "grpo_s1": base, "rloo": base, "bon": base, "sftplus": base}
    out = reg.algorithms(flat, cluster, resamples=2000)
    assert out["winner"] is None and out["no_difference_of_at_least"] == pytest.approx(0.0)
    rng = random.Random(1)
    noisy = {arm: {t: min(1.0, max(0.0, v + rng.gauss(0, 0.05))) for t, v in base.items()} for arm in flat}
    out = reg.algorithms(noisy, cluster, resamples=2000)
    assert out["winner"] is None and 0 < out["no_difference_of_at_least"] < 0.1
    better = {**noisy, "bon": {t: min(1.0, v + 0.2) for t, v in base.items()}}
    out = reg.algorithms(better, cluster, resamples=2000)
    assert out["winner"] == "bon" and out["no_difference_of_at_least"] is None
    levels = sorted(v["holm_level"] for v in out["pairs"].values())
    assert levels[0] == pytest.approx(0.95) and levels[-1] == pytest.approx(1 - 0.05 / 6)


def test_the_power_figure_comes_from_study_ones_committed_counts():
    data = json.loads((ROOT / "docs" / "results" / "learning_demo_gpu_counts.json").read_text())
    p = reg.detectable_effect(data["counts"], data["tasks"], clusters_new=276)
    assert p["clusters_study_one"] == 276 and p["se_new"] == pytest.approx(p["se_study_one"])
    assert 0.005 < p["primary_mde"] < 0.05 and p["secondary_mde_holm"] > p["primary_mde"]
    smaller = reg.detectable_effect(data["counts"], data["tasks"], clusters_new=4 * 276)
    assert smaller["primary_mde"] == pytest.approx(p["primary_mde"] / 2)
