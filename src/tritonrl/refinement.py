"""Refinement turns: each sample a trajectory of attempts, the next prompt carrying the verifier's feedback.

    refine(ModelTurns(model, gen), [Trajectory(task, i) for task in tasks for i in range(k)], turns=3, ...)
    refine(ReplayTurns(read_completions(path)), trajectories, turns, ...)   # rows carrying ``turn``

Each turn, the trajectories due for it (the last attempt failed, or ``refine_for_speed``) get their next attempt
from a ``ModelTurns`` (the refinement prompt, ``tritonrl.prompts.build_refinement_messages``, to a generator) or a
``ReplayTurns`` (a completions file's rows); the attempts are judged in one streaming batch and appended to
``results.jsonl`` (``tritonrl.results``); then the report. ``tritonrl.evaluate`` is the way in (``eval.turns``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonrl.config import EvalConfig, VerifyConfig
from tritonrl.errors import Interrupted
from tritonrl.generation import Generator, load_generator
from tritonrl.report import RESULTS_JSONL, print_warnings, write_report
from tritonrl.results import Pending, finished_rows, judge, judged_rows, row_key, write_rows
from tritonrl.tasks.model import KernelTask


@dataclass
class Trajectory:
    """One sample's attempts at a task, in turn order (``tritonrl.prompts.Attempt``)."""

    task: KernelTask
    index: int
    attempts: list = field(default_factory=list)

    @property
    def key(self) -> tuple:
        return (self.task.name, self.task.path, self.index)

    def wants_turn(self, turn: int, refine_for_speed: bool) -> bool:
        """Due for ``turn``: it has exactly the earlier turns, and the last one failed (or speed is refined)."""
        if len(self.attempts) != turn - 1:
            return False
        return turn == 1 or refine_for_speed or not self.attempts[-1].result.correct


class ModelTurns:
    """Attempts from a model: the refinement prompt of each trajectory, one completion each."""

    def __init__(self, model: str | Generator, gen: EvalConfig):
        self.model, self.gen, self.generator = model, gen, None

    def attempts(self, turn: int, due: list[Trajectory]) -> list[Pending]:
        from tritonrl.prompts import build_messages, build_refinement_messages, estimate_tokens, load_template

        if self.generator is None:
            self.generator = load_generator(self.model, self.gen) if isinstance(self.model, str) else self.model
        count = getattr(self.generator, "count_tokens", estimate_tokens)
        template = load_template(self.gen.prompt_template)
        prompts = [build_refinement_messages(build_messages(t.task, template), t.attempts,
                                             self.gen.max_prompt_tokens, count) for t in due]
        for p in prompts:
            if p.truncated or p.over_budget:
                print(f"tritonrl: turn {turn}: prompt shortened to fit eval.max_prompt_tokens="
                      f"{self.gen.max_prompt_tokens}: {p.context()}", file=sys.stderr)
        texts = self.generator.generate([p.messages for p in prompts], 1)
        return [Pending(t.task, t.index, completion=out[0], turn=turn, context=p.context() if turn > 1 else None)
                for t, p, out in zip(due, prompts, texts, strict=True)]


class ReplayTurns:
    """Attempts from a completions file whose rows carry ``turn``: the row for each due trajectory and turn."""

    def __init__(self, pending: list[Pending]):
        self.rows = {p.key: p for p in pending}

    def attempts(self, turn: int, due: list[Trajectory]) -> list[Pending]:
        return [self.rows[(*t.key, turn)] for t in due if (*t.key, turn) in self.rows]


def refine(source: ModelTurns | ReplayTurns, trajectories: list[Trajectory], turns: int, refine_for_speed: bool,
           verify: VerifyConfig | None, out_dir: str | Path, meta: dict[str, Any], resume: bool = False,
           verifier: Any = None) -> dict[str, Any]:
    """Up to ``turns`` attempts per trajectory: each turn, the due trajectories' attempts (``source``) are
    verified in one streaming batch and appended to ``results.jsonl``; then the report (``write_report``).

    ``resume`` keeps the rows already written and continues each trajectory from its last judged turn. Ctrl-C
    behaves as in ``tritonrl.evaluate.verify_and_report``."""
    from tritonrl.verify.result import VerifyResult

    verify = verify or VerifyConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_JSONL
    rows = sorted(judged_rows(finished_rows(path)), key=lambda r: r.get("turn", 1)) if resume else []
    write_rows(path, rows)
    by_key = {t.key: t for t in trajectories}
    info = {"device": verify.device, "timeout_s": verify.timeout_s, "turns": turns,
            "refine_for_speed": refine_for_speed, **meta}

    def record(new_rows: list[dict[str, Any]]) -> None:
        from tritonrl.prompts import Attempt

        for row in sorted(new_rows, key=lambda r: r.get("turn", 1)):
            trajectory = by_key.get(row_key(row)[:3])
            if trajectory is not None and len(trajectory.attempts) == row.get("turn", 1) - 1:
                trajectory.attempts.append(Attempt(row.get("code"), VerifyResult.from_dict(row["result"])))

    record(rows)
    owned = None
    if verifier is None:
        from tritonrl.verify.backends import make_verifier

        verifier = owned = make_verifier(verify)  # one verifier (warm workers) for every turn
    try:
        for turn in range(1, turns + 1):
            due = [t for t in trajectories if t.wants_turn(turn, refine_for_speed)]
            pending = source.attempts(turn, due) if due else []
            new_rows: list[dict[str, Any]] = []
            info["device"] = judge(pending, verify, verifier, path, new_rows, desc=f"eval turn {turn}")
            rows += new_rows
            record(new_rows)
    except KeyboardInterrupt:
        if rows:
            write_report(_by_trajectory(rows, trajectories), out, {**info, "interrupted": True})
        raise Interrupted(f"interrupted: {len(rows)} attempts are in {path}; the same command with --resume "
                          "continues each trajectory from its last judged turn") from None
    finally:
        if owned is not None:
            owned.close()
    rows = _by_trajectory(rows, trajectories)
    write_rows(path, rows)
    report = write_report(rows, out, info)
    print_warnings(report)
    return report


def _by_trajectory(rows: list[dict[str, Any]], trajectories: list[Trajectory]) -> list[dict[str, Any]]:
    order = {t.key: i for i, t in enumerate(trajectories)}
    return sorted(rows, key=lambda r: (order.get(row_key(r)[:3], len(order)), r.get("turn", 1)))
