"""Study two's pre-registration (issue 50): the rules that pick the starting point, stop a futile study, screen the
RL stream and size the arms, and the criterion the held-out run is judged by.

Fixed on 2026-11-29, committed before the calibration call (the study's first device call), and never changed
afterwards; docs/results.md, "Study two: pre-registration", says the same in words. The values the calibration
fixes (S*, SFT_best, H_val, the learning rate) are computed from its figures by the functions here and committed
before the main run. ``study2.py`` is the driver; ``tests/train/test_study2_criterion.py`` checks every rule.

A task's rate is its share of correct samples; an arm's correct@1 is the mean of its tasks' rates. pass@k is the
unbiased estimator (``tritonrl.evaluation.metrics.pass_at_k``). Every interval is a paired percentile bootstrap
(10,000 resamples, seed 0) over **op combinations** (a task's signature), as in study one
(``learning_demo_criterion``); "pooled" GRPO is, per task, the mean of the two GRPO seeds' rates.
"""

from __future__ import annotations

import math

import numpy as np
from learning_demo_criterion import best_temperature, pooled, task_rates  # noqa: F401  (the same statistics)

RESAMPLES = 10_000
SPLIT_SALT = "tritonrl-split-issue50-20261129"  # never used before this study
VALIDATION_K = 16             # validation samples a task at 1.0 (pass@1 and pass@16)
EDGE_K = 4                    # samples a screened prompt; the edge is 1..3 right of 4
NEAR_BEST = 0.03              # S* among the checkpoints whose pass@1 is within 3 points of the best
FUTILITY_HEADROOM = 0.08      # H(S*) below 8 points: the study is not run
H1_SHARE = 0.20               # H1: GRPO - SFT@S* closes at least 20% of H_val
LEARNING_RATES = (1e-5, 3e-5, 1e-4)
PROMPTS_PER_STEP = 32         # GRPO: 32 prompts x 8 completions a step
COMPLETIONS_PER_PROMPT = 8
STEP_CAP = 60                 # at most 60 steps (1,920 edge prompts, each seen once)
ARMS_SECONDARY = ("grpo", "rloo", "bon", "sftplus")
ALPHA = 0.05

CRITERION = {
    "study": "issue 50: study two, one H200, fresh split (salt tritonrl-split-issue50-20261129), S* chosen for "
             "headroom on validation (fixed 2026-11-29)",
    "H1": "pooled GRPO - SFT@S* correct@1 at temperature 1.0 on held-out >= 0.20 x H_val (H_val = pass@16 - pass@1 "
          "of S* on validation, fixed before the main run), and its 95% lower bound > 0",
    "H2": "pooled GRPO - SFT_best, both at SFT_best's best decoding temperature (validation, among greedy, 0.6, "
          "1.0; ties to the lower), has a 95% lower bound > 0",
    "H3": "pooled GRPO - control (rewards shuffled within each group, seed 0) has a 95% lower bound > 0, and "
          "control - SFT@S* a 95% lower bound <= 0",
    "criterion_met": "H1 and H2 and H3",
    "secondary": "GRPO (pooled), RLOO (per-prompt baseline), Best-of-N rejection-sampling fine-tuning and SFT+ (SFT "
                 "from S* on the same prompts' reference kernels), same prompts and verifier calls: pairwise "
                 "differences at 1.0, Holm-adjusted bootstrap intervals; a winner only when its adjusted lower "
                 "bound against every other arm is > 0, else 'no difference of at least N points'",
    "h1_share": H1_SHARE, "near_best": NEAR_BEST, "futility_headroom": FUTILITY_HEADROOM,
    "validation_k": VALIDATION_K, "edge_k": EDGE_K, "learning_rates": list(LEARNING_RATES),
    "prompts_per_step": PROMPTS_PER_STEP, "completions_per_prompt": COMPLETIONS_PER_PROMPT, "step_cap": STEP_CAP,
    "resamples": RESAMPLES, "cluster": "op combination (task signature)", "alpha": ALPHA,
}


# ---------------------------------------------------------------- the calibration's rules (validation only)
def pass_at(counts: dict[str, tuple[int, int]], k: int) -> float:
    """Mean over tasks of the unbiased pass@k from (correct, samples)."""
    from tritonrl.evaluation.metrics import pass_at_k

    return sum(pass_at_k(n, c, k) for c, n in counts.values()) / len(counts)


def checkpoint_scores(validation: dict[int, dict[str, tuple[int, int]]]) -> list[dict]:
    """Per SFT step: validation pass@1, pass@16 and the headroom H = pass@16 - pass@1."""
    rows = []
    for step in sorted(validation):
        k = min(VALIDATION_K, min(n for _, n in validation[step].values()))  # 16 as registered; less in a rehearsal
        p1, p16 = pass_at(validation[step], 1), pass_at(validation[step], k)
        rows.append({"step": step, "pass_at_1": p1, "pass_at_16": p16, "headroom": p16 - p1})
    return rows


def select_start(scores: list[dict]) -> dict:
    """SFT_best: the best pass@1 (ties to the earlier step). S*: the largest headroom among the checkpoints whose
    pass@1 is within ``NEAR_BEST`` of the best (ties to the better pass@1, then the earlier step)."""
    best = max(scores, key=lambda r: (r["pass_at_1"], -r["step"]))
    near = [r for r in scores if r["pass_at_1"] >= best["pass_at_1"] - NEAR_BEST - 1e-12]
    start = max(near, key=lambda r: (r["headroom"], r["pass_at_1"], -r["step"]))
    return {"s_star": start["step"], "sft_best": best["step"], "headroom_val": start["headroom"],
            "s_star_pass_at_1": start["pass_at_1"], "sft_best_pass_at_1": best["pass_at_1"],
            "futile": futile(start["headroom"])}


def futile(headroom_val: float) -> bool:
    """The futility rule: with less than 8 points of headroom at S*, the study is not run."""
    return headroom_val < FUTILITY_HEADROOM - 1e-12  # H from counts: 0.58 - 0.50 is 8 points, not 7.99


DEFAULT_LEARNING_RATE = 3e-5  # study one's rate: used when the check has too few edge prompts to compare rates


def rate_check_prompts(n_edge: int, wanted: int, per_step: int = PROMPTS_PER_STEP) -> int:
    """The rate check trains on the first ``wanted`` edge prompts (``--lr-steps`` steps of ``per_step``), or on all
    there are; with fewer than one step's worth it is not run and the rate is ``DEFAULT_LEARNING_RATE``."""
    return min(n_edge, wanted) if n_edge >= per_step else 0


def pick_learning_rate(validation_pass_at_1: dict[float, float]) -> float:
    """The short GRPO check's rate: the best validation pass@1 after the check, ties to the lower rate."""
    return max(validation_pass_at_1, key=lambda lr: (validation_pass_at_1[lr], -lr))


# ---------------------------------------------------------------- the RL stream and the equal budget
def edge(counts: dict[str, tuple[int, int]]) -> set[str]:
    """Prompts at the edge: some but not all of ``EDGE_K`` samples right (screened with exactly ``EDGE_K``)."""
    wrong_k = {t for t, (_, n) in counts.items() if n != EDGE_K}
    if wrong_k:
        raise ValueError(f"{len(wrong_k)} prompts were screened with other than {EDGE_K} samples")
    return {t for t, (c, n) in counts.items() if 0 < c < n}


def stream_edge(order: list[str], counts: dict[str, tuple[int, int]]) -> list[str]:
    """The edge prompts in the stream's order (every arm walks them in this order, each once)."""
    at_edge = edge(counts)
    return [t for t in order if t in at_edge]


def rl_steps(n_edge: int) -> int:
    """GRPO steps: as many full steps of ``PROMPTS_PER_STEP`` edge prompts as there are, at most ``STEP_CAP``."""
    return min(STEP_CAP, n_edge // PROMPTS_PER_STEP)


def verifier_calls(arm: str, steps: int) -> int:
    """Policy completions the verifier judges in an arm (counted before the verify cache). SFT+ judges none: its
    references are judged once, before any arm, for the prompts' admission, and count for no arm."""
    if arm == "sftplus":
        return 0
    if arm in ("grpo", "grpo_s0", "grpo_s1", "control_s0", "rloo", "bon"):
        return steps * PROMPTS_PER_STEP * COMPLETIONS_PER_PROMPT
    raise ValueError(f"unknown arm {arm!r}")


def equal_budget(calls: dict[str, int]) -> bool:
    """Every arm that uses the verifier used the same number of calls."""
    used = {arm: n for arm, n in calls.items() if arm != "sftplus"}
    return len(set(used.values())) == 1


# ---------------------------------------------------------------- statistics
def resampled(a: dict[str, float], b: dict[str, float] | None, cluster_of: dict[str, str],
              resamples: int = RESAMPLES, seed: int = 0) -> tuple[float, np.ndarray]:
    """The mean over tasks of ``a - b`` and its cluster-bootstrap resamples (whole op combinations drawn with
    replacement; the method and seed of ``learning_demo_criterion.clustered_difference``)."""
    tasks = sorted(set(a) & set(b)) if b is not None else sorted(a)
    if not tasks:
        raise ValueError("no task is in both arms")
    diffs = np.array([a[t] - (b[t] if b is not None else 0.0) for t in tasks])
    names = sorted({cluster_of.get(t, t) for t in tasks})
    index = {name: i for i, name in enumerate(names)}
    member = np.array([index[cluster_of.get(t, t)] for t in tasks])
    sums = np.bincount(member, weights=diffs, minlength=len(names))
    sizes = np.bincount(member, minlength=len(names)).astype(float)
    draws = np.random.default_rng(seed).integers(0, len(names), size=(resamples, len(names)))
    return float(diffs.mean()), sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)


def interval(a, b, cluster_of, level: float = 1 - ALPHA, resamples: int = RESAMPLES) -> dict:
    mean, means = resampled(a, b, cluster_of, resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    p = min(1.0, 2 * min(float((means <= 0).mean()), float((means >= 0).mean())))
    out = {"mean": mean, "ci": [float(low), float(high)], "level": level, "p": p, "se": float(means.std(ddof=1))}
    if abs(level - 0.95) < 1e-9:
        out["ci95"] = out["ci"]
    return out


def figures(rates: dict[str, dict[str, float]], cluster_of: dict[str, str], resamples: int = RESAMPLES) -> dict:
    """The primary differences from per-task rates of ``sft_star``, ``grpo_s0``, ``grpo_s1``, ``control_s0`` at 1.0
    and ``sft_best@best``, ``grpo_s0@best``, ``grpo_s1@best`` at SFT_best's best temperature."""
    grpo = pooled(rates["grpo_s0"], rates["grpo_s1"])
    return {
        "grpo_minus_sft": interval(grpo, rates["sft_star"], cluster_of, resamples=resamples),
        "grpo_s0_minus_sft": interval(rates["grpo_s0"], rates["sft_star"], cluster_of, resamples=resamples),
        "grpo_s1_minus_sft": interval(rates["grpo_s1"], rates["sft_star"], cluster_of, resamples=resamples),
        "grpo_minus_sft_best_at_best": interval(pooled(rates["grpo_s0@best"], rates["grpo_s1@best"]),
                                                rates["sft_best@best"], cluster_of, resamples=resamples),
        "grpo_minus_control": interval(grpo, rates["control_s0"], cluster_of, resamples=resamples),
        "control_minus_sft": interval(rates["control_s0"], rates["sft_star"], cluster_of, resamples=resamples),
    }


def hypotheses(f: dict, headroom_val: float) -> dict[str, bool]:
    h1 = f["grpo_minus_sft"]["mean"] >= H1_SHARE * headroom_val and f["grpo_minus_sft"]["ci95"][0] > 0
    h2 = f["grpo_minus_sft_best_at_best"]["ci95"][0] > 0
    h3 = f["grpo_minus_control"]["ci95"][0] > 0 and f["control_minus_sft"]["ci95"][0] <= 0
    return {"H1": bool(h1), "H2": bool(h2), "H3": bool(h3)}


def criterion_met(f: dict, headroom_val: float) -> bool:
    return all(hypotheses(f, headroom_val).values())


def algorithms(rates: dict[str, dict[str, float]], cluster_of: dict[str, str], resamples: int = RESAMPLES) -> dict:
    """The secondary comparison: every pair of ``ARMS_SECONDARY`` (``grpo`` pooled over seeds), Holm's step-down
    on the bootstrap p-values, each pair's interval at its Holm level (1 - alpha / (m - rank)); the winner, or the
    N such that no pairwise difference of N points or more is left inside the adjusted intervals."""
    arms = {"grpo": pooled(rates["grpo_s0"], rates["grpo_s1"]), **{a: rates[a] for a in ARMS_SECONDARY[1:]}}
    pairs = [(a, b) for i, a in enumerate(ARMS_SECONDARY) for b in ARMS_SECONDARY[i + 1:]]
    raw = {pair: interval(arms[pair[0]], arms[pair[1]], cluster_of, resamples=resamples) for pair in pairs}
    order = sorted(pairs, key=lambda pair: raw[pair]["p"])
    out, rejecting = {}, True
    for rank, (a, b) in enumerate(order):
        level = 1 - ALPHA / (len(pairs) - rank)
        adjusted = interval(arms[a], arms[b], cluster_of, level=level, resamples=resamples)
        rejecting = rejecting and raw[(a, b)]["p"] <= ALPHA / (len(pairs) - rank)
        out[f"{a}-{b}"] = {"mean": adjusted["mean"], "holm_ci": adjusted["ci"], "holm_level": level,
                           "p": raw[(a, b)]["p"], "significant": bool(rejecting and
                                                                      (adjusted["ci"][0] > 0 or adjusted["ci"][1] < 0))}
    winner = next((arm for arm in ARMS_SECONDARY if all(_beats(out, arm, other) for other in ARMS_SECONDARY
                                                        if other != arm)), None)
    bound = max(max(abs(v["holm_ci"][0]), abs(v["holm_ci"][1])) for v in out.values())
    return {"pairs": out, "winner": winner,
            "no_difference_of_at_least": None if winner else bound}


def _beats(pairs: dict, arm: str, other: str) -> bool:
    if f"{arm}-{other}" in pairs:
        row = pairs[f"{arm}-{other}"]
        return row["significant"] and row["holm_ci"][0] > 0
    row = pairs[f"{other}-{arm}"]
    return row["significant"] and row["holm_ci"][1] < 0


# ---------------------------------------------------------------- power, from study one's per-task counts
def detectable_effect(counts: dict, tasks: dict, clusters_new: int, a: str = "grpo_s0@1.0", b: str = "sft@1.0",
                      power_z: float = 0.8416, alpha_z: float = 1.96) -> dict:
    """The difference a study of ``clusters_new`` op combinations detects with 80% power (two-sided 5%), from the
    clustered standard error of study one's ``a - b`` scaled by sqrt(its clusters / ``clusters_new``); for the
    secondary pairs, at Holm's strictest level (alpha / 6: z 2.865)."""
    cluster_of = {t: v["signature"] for t, v in tasks.items()}
    ra, rb = task_rates(counts[a]), task_rates(counts[b])
    _, means = resampled(ra, rb, cluster_of)
    clusters_old = len({cluster_of[t] for t in set(ra) & set(rb)})
    se_new = float(means.std(ddof=1)) * math.sqrt(clusters_old / clusters_new)
    return {"se_study_one": float(means.std(ddof=1)), "clusters_study_one": clusters_old,
            "clusters_new": clusters_new, "se_new": se_new, "primary_mde": (alpha_z + power_z) * se_new,
            "secondary_mde_holm": (2.865 + power_z) * se_new}
