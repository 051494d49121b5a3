"""The pre-registered criterion of the four-GPU learning demonstration (issue 37) and the statistics it is read with.

Fixed on 2026-11-27, committed before any device call of that study, and never changed afterwards
(docs/results.md, "The four-GPU run: pre-registration", says the same in words). ``criterion_met(figures)`` is what
``learning_demo_gpu.py`` writes as ``criterion_met``.

Arms, all started from one SFT checkpoint chosen on the validation split: GRPO with seeds 0 and 1, and the matched
control with seeds 0 and 1 (the same settings, rewards shuffled within each group). Held-out split: at least 300
tasks of op combinations that no train or validation task has, drawn with a split salt never used before.

A task's rate is its share of correct samples; an arm's correct@1 is the mean of its tasks' rates. Every interval is
a paired percentile bootstrap (10,000 resamples, seed 0) that resamples **op combinations** (a task's signature:
family and ordered ops), so tasks that share a combination move together, and both arms of a difference move with
the same resampled tasks. "Pooled" RL is, per task, the mean of the two GRPO seeds' rates.

- **H1**: pooled RL - SFT at the evaluation temperature is at least 10 points, its 95% lower bound is above 0, and
  each seed's own RL - SFT estimate is above 0.
- **H2**: at SFT's best decoding temperature (chosen on the validation split among greedy, 0.6 and 1.0; ties go to
  the lower temperature), pooled RL - SFT has a 95% lower bound above 0.
- **H3**: for each seed, control - SFT has a 95% lower bound at or below 0, and RL - control a lower bound above 0
  (both at the evaluation temperature).
"""

from __future__ import annotations

import numpy as np

RESAMPLES = 10_000
CRITERION = {
    "study": "issue 37: four H100s, two seeds, a matched control, a fresh held-out split (fixed 2026-11-27)",
    "H1": "pooled RL - SFT >= 10 points correct@1 at the evaluation temperature on held-out, the paired bootstrap "
          "clustered by op combination has a 95% lower bound > 0, and each seed's own RL - SFT estimate > 0",
    "H2": "at SFT's best decoding temperature (validation, among greedy, 0.6, 1.0; ties to the lower), pooled RL - "
          "SFT has a 95% lower bound > 0",
    "H3": "for each seed: control - SFT has a 95% lower bound <= 0, and RL - control a 95% lower bound > 0",
    "h1_min_gain": 0.10,
    "resamples": RESAMPLES,
    "cluster": "op combination (task signature)",
    "temperatures": ["greedy", 0.6, 1.0],
}


# ---------------------------------------------------------------- statistics
def task_rates(counts: dict[str, tuple[int, int]]) -> dict[str, float]:
    """task -> (correct, samples) as task -> share correct."""
    return {task: c / n for task, (c, n) in counts.items() if n}


def clustered_difference(a: dict[str, float], b: dict[str, float] | None, cluster_of: dict[str, str],
                         resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Mean over tasks of ``a - b`` (``b`` None: of ``a`` alone) with a 95% percentile interval from resampling
    whole clusters (op combinations) with replacement; both arms use the same resampled tasks (paired).

    The tasks are those in ``a`` (and ``b``); a task with no cluster is its own cluster."""
    tasks = sorted(set(a) & set(b)) if b is not None else sorted(a)
    if not tasks:
        raise ValueError("no task is in both arms")
    diffs = np.array([a[t] - (b[t] if b is not None else 0.0) for t in tasks])
    names = sorted({cluster_of.get(t, t) for t in tasks})
    index = {name: i for i, name in enumerate(names)}
    member = np.array([index[cluster_of.get(t, t)] for t in tasks])
    sums = np.bincount(member, weights=diffs, minlength=len(names))
    sizes = np.bincount(member, minlength=len(names)).astype(float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(resamples, len(names)))
    # the mean over the tasks of the drawn clusters (a cluster drawn twice counts twice)
    means = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": float(diffs.mean()), "ci95": [float(low), float(high)], "tasks": len(tasks),
            "clusters": len(names), "resamples": resamples}


def pooled(*arms: dict[str, float]) -> dict[str, float]:
    """Per task, the mean of the arms' rates (the tasks every arm has)."""
    tasks = set(arms[0]).intersection(*arms[1:])
    return {t: sum(arm[t] for arm in arms) / len(arms) for t in sorted(tasks)}


def best_temperature(validation: dict[str, float]) -> str:
    """SFT's best decoding temperature on validation: the highest correct@1, ties to the lower temperature
    (``greedy`` < ``0.6`` < ``1.0``); keys are the temperatures as strings."""
    order = {name: i for i, name in enumerate(("greedy", "0.6", "1.0"))}
    unknown = set(validation) - set(order)
    if unknown:
        raise ValueError(f"unknown temperatures {sorted(unknown)}")
    return max(validation, key=lambda name: (validation[name], -order[name]))


# ---------------------------------------------------------------- the criterion
def figures(rates: dict[str, dict[str, float]], cluster_of: dict[str, str], resamples: int = RESAMPLES) -> dict:
    """Every difference the criterion reads, from per-task rates of the arms ``sft``, ``rl_s0``, ``rl_s1``,
    ``control_s0``, ``control_s1`` at the evaluation temperature and ``sft@best``, ``rl_s0@best``, ``rl_s1@best``
    at SFT's best decoding temperature."""
    def diff(a, b=None):
        return clustered_difference(a, b, cluster_of, resamples)

    out = {"rl_minus_sft": diff(pooled(rates["rl_s0"], rates["rl_s1"]), rates["sft"]),
           "rl_minus_sft_at_best_temperature": diff(pooled(rates["rl_s0@best"], rates["rl_s1@best"]),
                                                    rates["sft@best"])}
    for seed in (0, 1):
        rl, control = rates[f"rl_s{seed}"], rates[f"control_s{seed}"]
        out[f"rl_s{seed}_minus_sft"] = diff(rl, rates["sft"])
        out[f"control_s{seed}_minus_sft"] = diff(control, rates["sft"])
        out[f"rl_s{seed}_minus_control_s{seed}"] = diff(rl, control)
    return out


def hypotheses(f: dict) -> dict[str, bool]:
    """H1, H2, H3 from ``figures``' differences."""
    seeds = (0, 1)
    h1 = (f["rl_minus_sft"]["mean"] >= CRITERION["h1_min_gain"] and f["rl_minus_sft"]["ci95"][0] > 0
          and all(f[f"rl_s{s}_minus_sft"]["mean"] > 0 for s in seeds))
    h2 = f["rl_minus_sft_at_best_temperature"]["ci95"][0] > 0
    h3 = all(f[f"control_s{s}_minus_sft"]["ci95"][0] <= 0 and f[f"rl_s{s}_minus_control_s{s}"]["ci95"][0] > 0
             for s in seeds)
    return {"H1": bool(h1), "H2": bool(h2), "H3": bool(h3)}


def criterion_met(f: dict) -> bool:
    """All three hypotheses hold."""
    return all(hypotheses(f).values())
