"""The four-GPU demonstration's pre-registered criterion (benchmarks/studies/learning_demo_criterion.py): the bootstrap
resamples op combinations, not tasks, and ``criterion_met`` needs H1, H2 and H3."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def criterion():
    spec = importlib.util.spec_from_file_location("learning_demo_criterion",
                                                  ROOT / "benchmarks" / "studies" / "learning_demo_criterion.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bootstrap_resamples_op_combinations_not_tasks():
    """Ten tasks of one combination that all succeed or all fail are one observation: copying every task ten
    times within its combination must not narrow the interval (a task-level bootstrap would, by ~sqrt(10))."""
    c = criterion()
    rates = {f"t{i}": float(i % 2) for i in range(20)}
    alone = {t: t for t in rates}
    once = c.clustered_difference(rates, None, alone, resamples=4000)
    copies = {f"{t}_{j}": v for t, v in rates.items() for j in range(10)}
    cluster = {f"{t}_{j}": t for t in rates for j in range(10)}
    clustered = c.clustered_difference(copies, None, cluster, resamples=4000)
    by_task = c.clustered_difference(copies, None, {}, resamples=4000)  # no clusters: every task its own
    width = lambda r: r["ci95"][1] - r["ci95"][0]  # noqa: E731
    assert once["mean"] == clustered["mean"] == 0.5
    assert clustered["clusters"] == 20 and clustered["tasks"] == 200
    assert width(clustered) == pytest.approx(width(once), rel=0.15)
    assert width(by_task) < 0.5 * width(clustered)


def test_the_difference_is_paired_within_tasks():
    """Arms that differ by a constant on every task: the paired interval is that constant, however much the
    tasks themselves vary."""
    c = criterion()
    sft = {f"t{i}": (i % 10) / 10 for i in range(50)}
    rl = {t: v + 0.05 for t, v in sft.items()}
    clusters = {t: f"c{int(t[1:]) // 5}" for t in sft}
    result = c.clustered_difference(rl, sft, clusters, resamples=2000)
    assert result["mean"] == pytest.approx(0.05)
    assert result["ci95"] == pytest.approx([0.05, 0.05])
    assert result["clusters"] == 10


def test_pooled_and_best_temperature():
    c = criterion()
    assert c.pooled({"a": 1.0, "b": 0.0}, {"a": 0.5, "b": 0.5, "c": 1.0}) == {"a": 0.75, "b": 0.25}
    assert c.best_temperature({"greedy": 0.3, "0.6": 0.4, "1.0": 0.2}) == "0.6"
    assert c.best_temperature({"greedy": 0.4, "0.6": 0.4, "1.0": 0.4}) == "greedy"  # ties to the lower
    with pytest.raises(ValueError):
        c.best_temperature({"0.8": 0.5})


def arms(gain=0.15, gain_best=0.1, control=0.0, seed_gains=(None, None), n=60):
    """Per-task rates of every arm the criterion reads: SFT at 0.3 (0.4 at its best temperature); RL and the
    control shifted by the given gains on every task (so intervals are tight around them)."""
    tasks = [f"t{i}" for i in range(n)]
    base = {t: 0.3 + 0.01 * (i % 5) for i, t in enumerate(tasks)}
    best = {t: v + 0.1 for t, v in base.items()}
    shift = lambda rates, d: {t: v + d for t, v in rates.items()}  # noqa: E731
    out = {"sft": base, "sft@best": best}
    for seed in (0, 1):
        g = seed_gains[seed] if seed_gains[seed] is not None else gain
        out[f"rl_s{seed}"] = shift(base, g)
        out[f"rl_s{seed}@best"] = shift(best, gain_best)
        out[f"control_s{seed}"] = shift(base, control)
    return out, {t: f"c{i // 3}" for i, t in enumerate(tasks)}


@pytest.mark.parametrize("case, expected", [
    ({}, {"H1": True, "H2": True, "H3": True}),
    ({"gain": 0.08}, {"H1": False, "H2": True, "H3": True}),  # under 10 points
    ({"seed_gains": (0.32, -0.02), "control": -0.05},
     {"H1": False, "H2": True, "H3": True}),  # pooled 15 points, one seed below 0
    ({"gain_best": 0.0}, {"H1": True, "H2": False, "H3": True}),  # only a change of temperature
    ({"control": 0.05}, {"H1": True, "H2": True, "H3": False}),  # the control gains too
    ({"control": 0.15}, {"H1": True, "H2": True, "H3": False}),  # RL no better than the control
])
def test_criterion_needs_h1_h2_and_h3(case, expected):
    c = criterion()
    rates, clusters = arms(**case)
    result = c.hypotheses(c.figures(rates, clusters, resamples=500))
    assert result == expected
    assert c.criterion_met(c.figures(rates, clusters, resamples=500)) == all(expected.values())


def gpu_driver():
    spec = importlib.util.spec_from_file_location("learning_demo_gpu", ROOT / "benchmarks" / "studies" / "learning_demo_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plan_of_the_four_gpu_run_costs_each_phase_from_the_measurements():
    """configs/demo4.yaml's phases from measured figures: generation at the completion limit, verification per
    candidate, updates; jobs of a phase spread over the GPUs (the four arms side by side, one a GPU)."""
    from tritonrl.config import PipelineConfig, load_config

    g = gpu_driver()
    config = load_config(str(ROOT / "configs" / "demo4.yaml"), [], schema=PipelineConfig)
    args = g.parse_args(["--config", "x"])
    m = {"gen_s_per_token_rl_batch": 0.01, "gen_s_per_token_eval_batch": 0.02, "sft_step_s": 0.1,
         "grpo_update_s": 1.0, "verify_s_per_completion": 0.02,
         "tasks": {"sft": 3000, "rl": 2000, "validation": 100, "heldout": 340}}
    four, one = g.plan(config, args, m, 4), g.plan(config, args, m, 1)
    rl = config.rl
    step = rl.max_completion_length * 0.01 + rl.per_device_batch_size * 0.02 + 1.0
    assert four["grpo_step_s"] == pytest.approx(step)
    assert four["phases_s"]["rl (four arms)"] == round(rl.steps * step)  # side by side
    assert one["phases_s"]["rl (four arms)"] == round(4 * rl.steps * step)  # one after another
    heldout = 6 * config.eval.max_new_tokens * 0.02 + 340 * args.heldout_k * 0.02  # 340 tasks in calls of 64
    turns = 3 * (6 * config.eval.max_new_tokens * 0.02 + 340 * args.turns_k * 0.02)
    assert one["phases_s"]["held-out evaluations"] == round(8 * heldout + turns)
    assert four["phases_s"]["held-out evaluations"] < one["phases_s"]["held-out evaluations"] / 3
    assert four["phases_s"]["sft (checkpoints validated meanwhile)"] == round(config.sft.max_steps * 0.1)
    assert four["total_s"] == pytest.approx(sum(four["phases_s"].values()), abs=3)


def test_the_recorded_run_recomputes_from_its_held_out_counts():
    """docs/results/learning_demo_gpu.json (the issue-37 run) follows from the per-task counts committed beside it:
    the registered function on those counts gives the same differences, intervals and verdicts."""
    import json

    c = criterion()
    summary = json.loads((ROOT / "docs" / "results" / "learning_demo_gpu.json").read_text())
    data = json.loads((ROOT / "docs" / "results" / "learning_demo_gpu_counts.json").read_text())
    rates = {run: c.task_rates({t: tuple(v) for t, v in counts.items()}) for run, counts in data["counts"].items()}
    best = summary["decoding"]["best"]
    arms = {"sft": "sft@1.0", "rl_s0": "grpo_s0@1.0", "rl_s1": "grpo_s1@1.0", "control_s0": "control_s0@1.0",
            "control_s1": "control_s1@1.0", "sft@best": f"sft@{best}", "rl_s0@best": f"grpo_s0@{best}",
            "rl_s1@best": f"grpo_s1@{best}"}
    cluster_of = {t: info["signature"] for t, info in data["tasks"].items()}
    figures = c.figures({name: rates[run] for name, run in arms.items()}, cluster_of)
    for key, value in figures.items():
        assert value["mean"] == pytest.approx(summary[key]["mean"], abs=1e-12), key
        assert value["ci95"] == pytest.approx(summary[key]["ci95"], abs=1e-12), key
    assert c.hypotheses(figures) == summary["hypotheses"] == {"H1": False, "H2": False, "H3": True}
    assert c.criterion_met(figures) is summary["criterion_met"] is False
