"""An RL run's learning-signal health: ``signal_health.{json,md,png}`` from the trainer's ``log_history``.

    health = write_signal_health(trainer.state.log_history, stage_dir)   # tritonrl.train.rl, at the end of a run
    health["no_signal"]   # True when every logged step had all groups at zero reward variance
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tritonrl.util.render import fmt, markdown_table, pyplot

HEALTH_COLUMNS = (  # (column, log_history key): TRL's own metrics, then the reward adapter's (train/reward_adapters.py)
    ("reward", "reward"), ("reward_std", "reward_std"), ("zero_std_groups", "frac_reward_zero_std"),
    ("true_reward_std", "signal/reward_std"), ("true_zero_std_groups", "signal/frac_zero_std_groups"),
    ("correct_rate", "verify/correct_rate"), ("kl", "kl"), ("completion_len", "completions/mean_length"),
    ("verify_s", "verify/time_s"), ("cache_hits", "verify/cache_hit_rate"), ("entropy", "entropy"),
)


def signal_health(log_history: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-step learning-signal figures of an RL run from the trainer's ``log_history``, and a verdict.

    ``reward_std``/``zero_std_groups`` are what the trainer optimised (shuffled in a control run);
    ``true_*`` are the verifier's own. A run where every step has all groups at zero variance learned nothing:
    GRPO's advantages were all 0.
    """
    steps = []
    for entry in log_history:
        if "reward" not in entry and "signal/reward_std" not in entry:
            continue
        row = {"step": entry.get("step")}
        row.update({column: entry.get(key) for column, key in HEALTH_COLUMNS})
        steps.append(row)
    flat = [s["zero_std_groups"] for s in steps if s["zero_std_groups"] is not None]
    with_signal = sum(1 for f in flat if f < 1.0)
    return {"steps": steps, "steps_with_signal": with_signal, "steps_logged": len(steps),
            "no_signal": bool(flat) and with_signal == 0}


def render_signal_health(health: dict[str, Any], title: str = "RL learning-signal health") -> str:
    lines = [f"# {title}", ""]
    if health["no_signal"]:
        lines += ["> **WARNING: no learning signal.** Every logged step had all groups at zero reward variance, so "
                  "GRPO's advantages were 0 and the policy did not move. Raise the sampling temperature, add tasks "
                  "the model has not memorised, or weaken the SFT.", ""]
    lines.append(f"{health['steps_with_signal']} of {health['steps_logged']} logged steps had a group with reward "
                 "variance (zero_std_groups < 1).")
    lines.append("")
    header = ["step", *(column for column, _ in HEALTH_COLUMNS)]
    rows = [[str(s["step"]), *(fmt(s[c], percent=False) if isinstance(s[c], (int, float)) else "n/a"
                               for c, _ in HEALTH_COLUMNS)] for s in health["steps"]]
    return "\n".join(lines + markdown_table(header, rows)) + "\n"


def write_signal_health(log_history: list[dict[str, Any]], out_dir: str | Path) -> dict[str, Any]:
    """``signal_health.json``, ``signal_health.md`` and ``signal_health.png`` in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    health = signal_health(log_history)
    (out / "signal_health.json").write_text(json.dumps(health, indent=1) + "\n")
    (out / "signal_health.md").write_text(render_signal_health(health))
    plt = pyplot()
    if plt is not None and health["steps"]:
        _health_plot(plt, health, out / "signal_health.png")
    return health


def _health_plot(plt, health: dict[str, Any], path: Path) -> None:
    panels = (("reward", "reward_std"), ("zero_std_groups", "true_zero_std_groups"), ("kl",), ("verify_s",))
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.2))
    steps = [s["step"] for s in health["steps"]]
    for ax, columns in zip(axes, panels):
        for column in columns:
            values = [s[column] for s in health["steps"]]
            if any(v is not None for v in values):
                ax.plot(steps, [float("nan") if v is None else v for v in values], marker="o", label=column)
        ax.set_xlabel("step")
        ax.set_title(" / ".join(columns))
        if ax.has_data():
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
