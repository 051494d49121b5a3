"""Study two's result (issue 50), on the CPU: ``docs/results/study2.json`` and ``study2.png`` from the per-task
counts, computed only by the registered functions of ``study2_criterion`` (bootstrap over op combinations, Holm).

    python benchmarks/studies/study2.py --config configs/study2.yaml --phase report   # [--counts FILE] [--out DIR]

Two steps, so the figures can be recomputed from what is committed: ``build_counts`` reads the main run's
directory (its evaluations, prompts, training logs, held-out runs) into ``study2_counts.json``; ``result`` turns
that file alone into the result (``tests/train/test_study2_report.py`` recomputes it).

``study2_counts.json``: ``calibration`` (S*, SFT_best, H_val, SFT_best's temperature, the rate); ``tasks`` (held-out
task -> signature, family, distance to the nearest training op combination); ``counts`` (evaluation -> task ->
[correct, samples]: ``LABEL@1.0`` for every arm and ``sft_star``, ``sft_best@best``, ``grpo_s0@best``,
``grpo_s1@best``); ``unseen`` (label -> prompt -> [correct, samples]); ``prompts`` (S, the edge, admission);
``verifier_calls`` (arm -> completions judged as registered); ``training`` (arm -> per-step reward, KL, entropy,
zero-variance groups); ``runs`` (every held-out evaluation); ``holds``; ``device``; ``commit``.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import study2_criterion as reg
import study2_main as main_run
from study2_jobs import counts, demo, gpu, paths

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
PREREGISTRATION_COMMIT = "6382d029b5d566d3c8d909485d87fa1592dcd713"  # "Study two's pre-registration (issue 50)"
PRIMARY = ("sft_star", "grpo_s0", "grpo_s1", "control_s0", "sft_best@best", "grpo_s0@best", "grpo_s1@best")
SECONDARY = ("grpo_s0", "grpo_s1", "rloo", "bon", "sftplus")
AT_1 = ("sft_star", "grpo_s0", "grpo_s1", "control_s0", "rloo", "bon", "sftplus")
STAGES = {"rloo": "rloo", "bon": "best_of_n", "sftplus": "sft"}


# ---------------------------------------------------------------- the run's directory -> study2_counts.json
def build_counts(config, args) -> dict:
    m = paths(config)["main"]
    cal = main_run.committed(args)
    done = {json.loads(p.read_text())["job"] for p in (m / "jobs").glob("*.json")}
    best = cal["sft_best_temperature"]
    found: dict[str, dict] = {}
    for label in AT_1:
        if f"heldout:{label}@{main_run.EVAL_T}" in done:
            found[f"{label}@{main_run.EVAL_T}"] = counts(m / "heldout" / f"{label}@{main_run.EVAL_T}")
    for label in ("sft_best", "grpo_s0", "grpo_s1"):
        own = main_run.heldout_evals(label, cal)
        at_best = [e for e in own if e.endswith(f"@{best}") and (best != main_run.EVAL_T or label == "sft_best")]
        if at_best and at_best[0] in done:
            found[f"{label}@best"] = counts(m / "heldout" / at_best[0].split(":", 1)[1])
        elif not at_best:  # at 1.0: the first 8 of the 16 samples at 1.0 (of S* for SFT_best when it is S*)
            source = "sft_star" if label == "sft_best" else label
            if f"heldout:{source}@{main_run.EVAL_T}" in done:
                found[f"{label}@best"] = counts(m / "heldout" / f"{source}@{main_run.EVAL_T}",
                                                samples_below=main_run.K_AT_BEST)
    rows = demo.read_rows(main_run.heldout_dir(config, args))
    train = demo.read_rows(paths(config)["sft"]) + demo.read_rows(m / "prompts")
    distance = demo.nearest_training(rows, train)["per_task"]
    plan = json.loads((m / "prompts.json").read_text())
    doc = {"study": "issue 50: study two", "date": datetime.date.today().isoformat(), "commit": demo._commit(),
           "device": device_of(m, getattr(args, "device", None)), "calibration": {k: cal.get(k) for k in ("s_star", "sft_best", "headroom_val",
                                                                        "sft_best_temperature", "learning_rate")},
           "tasks": {r["name"]: {"signature": r["signature"], "family": r["family"], "distance": distance.get(r["name"])}
                     for r in rows},
           "counts": {k: {t: list(c) for t, c in v.items()} for k, v in found.items()},
           "unseen": {d.name: {t: list(c) for t, c in counts(d).items()} for d in sorted((m / "unseen").glob("*"))
                      if f"unseen:{d.name}" in done},
           "prompts": {k: v for k, v in plan.items() if k not in ("prompts", "unseen")},
           "verifier_calls": plan["verifier_calls"],
           "training": {arm: health(m / "arms" / arm / STAGES.get(arm, "grpo")) for arm in main_run.ARMS},
           "runs": [json.loads(line) for line in (m / "heldout_runs.jsonl").read_text().splitlines() if line.strip()]
           if (m / "heldout_runs.jsonl").exists() else [],
           "holds": json.loads((m / "holds.json").read_text()) if (m / "holds.json").exists() else []}
    return doc


def device_of(main_dir: Path, stated: str | None = None) -> str:
    """Where the run ran: each hold's machine, as the hold recorded it when it started (holds before 2026-11-30's
    fifth did not: ``stated``, from ``--device``, names theirs), and the device of the verdicts, as the held-out
    evaluations' reports name it."""
    holds = json.loads((main_dir / "holds.json").read_text()) if (main_dir / "holds.json").exists() else []
    recorded = {h["hold"]: h["machine"] for h in holds if h.get("machine")}
    if len(recorded) < len(holds) and not stated:
        raise SystemExit(f"study2: holds {[h['hold'] for h in holds if h['hold'] not in recorded]} did not record "
                         "their machine: say it with --device (e.g. 'holds 1-4: NVIDIA H200')")
    verdicts = sorted({json.loads(p.read_text()).get("meta", {}).get("device")
                       for p in main_dir.glob("heldout/*/report.json")} - {None})
    machines = "; ".join(f"hold {h}: {m}" for h, m in sorted(recorded.items()))
    named = {"cpu": "the host's CPU cores (Triton's interpreter)", "cuda": "the GPU"}
    judged = " and ".join(named.get(v, v) for v in verdicts) or "a device not recorded"
    return "; ".join(filter(None, [stated, machines, f"verdicts on {judged}"]))


def health(stage_dir: Path) -> dict | None:
    path = stage_dir / "signal_health.json"
    if not path.exists():
        return None
    steps = json.loads(path.read_text()).get("steps") or []
    keep = ("step", "reward", "true_reward_std", "true_zero_std_groups", "kl", "entropy", "correct_rate")
    return {"steps": [{k: s.get(k) for k in keep if k in s} for s in steps],
            "mean_zero_variance_share": gpu._mean([s["true_zero_std_groups"] for s in steps
                                                   if s.get("true_zero_std_groups") is not None])}


# ---------------------------------------------------------------- study2_counts.json -> study2.json
def result(doc: dict, resamples: int = reg.RESAMPLES) -> dict:
    """The registered figures from the per-task counts alone: H1-H3 and ``criterion_met`` (``figures``,
    ``hypotheses``), each arm's correct@1 with its interval, the secondary comparison (``algorithms``)."""
    cluster_of = {t: v["signature"] for t, v in doc["tasks"].items()}
    rates = {k.removesuffix(f"@{main_run.EVAL_T}"): reg.task_rates({t: tuple(c) for t, c in v.items()})
             for k, v in doc["counts"].items()}
    headroom = doc["calibration"]["headroom_val"]
    out = {"preregistration_commit": PREREGISTRATION_COMMIT, "criterion": reg.CRITERION,
           "device": doc.get("device"), "heldout_tasks": len(doc["tasks"]),
           "heldout_op_combinations": len(set(cluster_of.values())), "headroom_val": headroom,
           "calibration": doc["calibration"], "commit": doc.get("commit")}
    missing = [k for k in PRIMARY if k not in rates]
    if missing:
        out.update(criterion_met=False, hypotheses=None, grpo_minus_sft=None, missing=missing)
    else:
        figures = reg.figures(rates, cluster_of, resamples=resamples)
        out.update(criterion_met=reg.criterion_met(figures, headroom), hypotheses=reg.hypotheses(figures, headroom),
                   grpo_minus_sft={"mean": figures["grpo_minus_sft"]["mean"],
                                   "ci95": figures["grpo_minus_sft"]["ci95"]},
                   h1_threshold=reg.H1_SHARE * headroom, figures=figures)
    out["arms"] = {label: arm_figures(doc, label, rates[label], cluster_of, resamples) for label in rates}
    calls = {arm: n for arm, n in doc["verifier_calls"].items()}
    secondary_missing = [a for a in SECONDARY if a not in rates]
    out["algorithms"] = ({"missing": secondary_missing} if secondary_missing else
                         reg.algorithms(rates, cluster_of, resamples=resamples))
    out["algorithms"]["equal_budget"] = reg.equal_budget(calls)
    out["algorithms"]["verifier_calls"] = calls
    out["unseen"] = {label: reg.pass_at({t: tuple(c) for t, c in v.items()}, 1) for label, v in doc["unseen"].items()}
    out["prompts"] = doc.get("prompts")
    out["training"] = doc.get("training")
    out["runs"] = doc.get("runs", [])
    out["holds"] = doc.get("holds", [])
    return out


def arm_figures(doc: dict, label: str, rates: dict[str, float], cluster_of: dict, resamples: int) -> dict:
    """One evaluation: correct@1 with its 95% interval (``interval``: op combinations resampled), pass@1..k, per
    family and per distance, and its arm's registered verifier calls."""
    key = label if "@" in label else f"{label}@{main_run.EVAL_T}"
    raw = {t: tuple(c) for t, c in doc["counts"][key].items()}
    k = min(n for _, n in raw.values())
    ci = reg.interval(rates, None, cluster_of, resamples=resamples)
    tasks = doc["tasks"]

    def mean_over(pick) -> dict:
        groups: dict[str, list[float]] = {}
        for t, r in rates.items():
            groups.setdefault(str(pick(tasks[t])), []).append(r)
        return {g: sum(v) / len(v) for g, v in sorted(groups.items())}

    arm = label.split("@")[0]
    return {"correct_at_1": {"mean": ci["mean"], "ci95": ci["ci95"]}, "samples_per_task": k,
            "pass_at": {str(j): reg.pass_at(raw, j) for j in range(1, k + 1)},
            "families": mean_over(lambda v: v["family"]), "by_distance": mean_over(lambda v: v["distance"]),
            "verifier_calls": doc["verifier_calls"].get(arm)}


def plot(summary: dict, path: Path) -> str:
    """Each evaluation's held-out correct@1 with its 95% interval (op combinations resampled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = list(summary["arms"])
    means = [summary["arms"][a]["correct_at_1"]["mean"] for a in arms]
    errors = [[m - summary["arms"][a]["correct_at_1"]["ci95"][0] for a, m in zip(arms, means)],
              [summary["arms"][a]["correct_at_1"]["ci95"][1] - m for a, m in zip(arms, means)]]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    ax.bar(range(len(arms)), means, yerr=errors, capsize=3)
    ax.set_xticks(range(len(arms)), arms, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("held-out correct@1")
    ax.set_ylim(0, 1)
    met = summary.get("criterion_met")
    ax.set_title(f"study two: {summary['heldout_tasks']} held-out tasks, 95% CI by op combination; "
                 f"criterion_met {met}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def run(config, args) -> dict:
    """``--phase report``: the counts made from the run when it is here (else the committed ones), then the result
    and its plot under ``--out`` (default docs/results)."""
    out_dir = Path(args.out) if args.out else RESULTS
    counts_path = Path(args.counts) if args.counts else out_dir / "study2_counts.json"
    if (paths(config)["main"] / "prompts.json").exists():
        counts_path.parent.mkdir(parents=True, exist_ok=True)
        counts_path.write_text(json.dumps(build_counts(config, args), indent=1) + "\n")
    if not counts_path.exists():
        raise SystemExit(f"study2: no per-task counts at {counts_path} and no main run at {paths(config)['main']}")
    summary = result(json.loads(counts_path.read_text()))
    figure = Path(plot(summary, out_dir / "study2.png")).resolve()
    summary["figure"] = str(figure.relative_to(RESULTS.parents[1])) if figure.is_relative_to(RESULTS.parents[1]) \
        else str(figure)
    (out_dir / "study2.json").write_text(json.dumps(summary, indent=1) + "\n")
    return {k: summary[k] for k in ("criterion_met", "hypotheses", "grpo_minus_sft", "heldout_tasks", "figure")}
