"""Refinement turns: each sample a trajectory of attempts, the next prompt carrying the verifier's feedback.

    refine(ModelTurns(model, gen), [Trajectory(task, i) for task in tasks for i in range(k)], turns=3, ...)
    refine(ReplayTurns(read_completions(path)), trajectories, turns, ...)   # rows carrying ``turn``

Each turn, the trajectories due for it (the last attempt failed, or ``refine_for_speed``) get their next attempt
from a ``ModelTurns`` (the refinement prompt, ``tritonrl.common.prompts.build_refinement_messages``, to a generator) or a
``ReplayTurns`` (a completions file's rows); the attempts are judged in one streaming batch and appended to
``results.jsonl`` (``tritonrl.common.result_log``); then the report. ``tritonrl.evaluation.evaluate`` is the way in (``eval.turns``).
A model's attempts are saved in ``completions.jsonl`` after each generate call (``tritonrl.evaluation.samples``); SIGTERM or
SIGINT stops after the call or the verdict under way (``tritonrl.errors.Stopped``), and ``resume`` reuses both
files: an attempt whose prompt is the same is not generated again.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonrl.common.generation import Generator, load_generator, prompts_per_call
from tritonrl.common.result_log import Pending, finished_rows, judge, judged_rows, row_key, write_rows
from tritonrl.common.signals import SignalHandlers, StopRequest
from tritonrl.config import EvalConfig, VerifyConfig
from tritonrl.errors import Interrupted, Stopped
from tritonrl.evaluation.report import RESULTS_JSONL, print_warnings, write_report
from tritonrl.evaluation.samples import COMPLETIONS_JSONL, SampleLog
from tritonrl.tasks.model import KernelTask


@dataclass
class Trajectory:
    """One sample's attempts at a task, in turn order (``tritonrl.common.prompts.Attempt``)."""

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
    """Attempts from a model: the refinement prompt of each trajectory, one completion each, saved in ``log``."""

    def __init__(self, model: str | Generator, gen: EvalConfig):
        self.model, self.gen, self.generator = model, gen, None

    def _generator(self) -> Generator:
        if self.generator is None:
            self.generator = load_generator(self.model, self.gen) if isinstance(self.model, str) else self.model
        return self.generator

    def attempts(self, turn: int, due: list[Trajectory], log: SampleLog, stop: StopRequest) -> list[Pending] | None:
        """The due trajectories' attempts at ``turn`` (from ``log`` when their prompts were sampled before); None
        when ``stop`` was raised before all were sampled."""
        from tritonrl.common.prompts import (
            build_messages,
            build_refinement_messages,
            estimate_tokens,
            load_template,
        )

        count = getattr(self._generator(), "count_tokens", estimate_tokens)  # the prompts' size, as the model sees it
        template = load_template(self.gen.prompt_template)
        prompts = [build_refinement_messages(build_messages(t.task, template), t.attempts,
                                             self.gen.max_prompt_tokens, count) for t in due]
        for p in prompts:
            if p.truncated or p.over_budget:
                print(f"tritonrl: turn {turn}: prompt shortened to fit eval.max_prompt_tokens="
                      f"{self.gen.max_prompt_tokens}: {p.context()}", file=sys.stderr)
        keys = [[(*t.key, turn)] for t in due]
        texts = log.sample(self._generator, [p.messages for p in prompts], keys,
                           prompts_per_call(self.model, self.gen), stop)
        if texts is None:
            return None
        return [Pending(t.task, t.index, completion=texts[key[0]], turn=turn,
                        context=p.context() if turn > 1 else None)
                for t, p, key in zip(due, prompts, keys, strict=True)]


class ReplayTurns:
    """Attempts from a completions file whose rows carry ``turn``: the row for each due trajectory and turn."""

    def __init__(self, pending: list[Pending]):
        self.rows = {p.key: p for p in pending}

    def attempts(self, turn: int, due: list[Trajectory], log: SampleLog, stop: StopRequest) -> list[Pending]:
        return [self.rows[(*t.key, turn)] for t in due if (*t.key, turn) in self.rows]


def refine(source: ModelTurns | ReplayTurns, trajectories: list[Trajectory], turns: int, refine_for_speed: bool,
           verify: VerifyConfig | None, out_dir: str | Path, meta: dict[str, Any], resume: bool = False,
           verifier: Any = None, stop: StopRequest | None = None, display: Any = None) -> dict[str, Any]:
    """Up to ``turns`` attempts per trajectory: each turn, the due trajectories' attempts (``source``) are
    verified in one streaming batch and appended to ``results.jsonl``; then the report (``write_report``).

    ``resume`` keeps the rows already written and continues each trajectory from its last judged turn, with the
    attempts already sampled (``completions.jsonl``). SIGTERM/SIGINT (or a raised ``stop``) and Ctrl-C behave as
    in ``tritonrl.evaluation.evaluate.verify_and_report``."""
    stop = stop or StopRequest()
    with SignalHandlers(stop, notice="stopping after the generate call or the verdicts under way"):
        return _refine(source, trajectories, turns, refine_for_speed, verify, out_dir, meta, resume, verifier, stop,
                       display)


def _refine(source, trajectories, turns, refine_for_speed, verify, out_dir, meta, resume, verifier, stop, display):
    from tritonrl.verify.shared.verdict import VerifyResult

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
        from tritonrl.common.prompts import Attempt

        for row in sorted(new_rows, key=lambda r: r.get("turn", 1)):
            trajectory = by_key.get(row_key(row)[:3])
            if trajectory is not None and len(trajectory.attempts) == row.get("turn", 1) - 1:
                trajectory.attempts.append(Attempt(row.get("code"), VerifyResult.from_dict(row["result"])))

    record(rows)
    log = SampleLog(out / COMPLETIONS_JSONL, resume)
    stopped = None
    owned = None
    if verifier is None:
        from tritonrl.verify.parent.backends import make_verifier

        verifier = owned = make_verifier(verify)  # one verifier (warm workers) for every turn
    try:
        for turn in range(1, turns + 1):
            due = [t for t in trajectories if t.wants_turn(turn, refine_for_speed)]
            pending = source.attempts(turn, due, log, stop) if due else []
            if pending is None:
                stopped = f"while sampling turn {turn} (completions in {log.path})"
                break
            new_rows: list[dict[str, Any]] = []
            info["device"] = judge(pending, verify, verifier, path, new_rows, desc=f"eval turn {turn}", stop=stop,
                                   display=display)
            rows += new_rows
            record(new_rows)
            if stop.is_set() and len(new_rows) < len(pending):
                stopped = f"after {len(new_rows)}/{len(pending)} attempts of turn {turn} were verified"
                break
    except KeyboardInterrupt:  # at once: no report (--resume makes it)
        raise Interrupted(f"interrupted: {len(rows)} attempts are in {path}; the same command with --resume "
                          "continues each trajectory from its last judged turn") from None
    finally:
        if owned is not None:
            owned.close()
    if stopped:
        if rows:
            write_report(_by_trajectory(rows, trajectories), out, {**info, "interrupted": True})
        raise Stopped(f"eval: stopped by {stop.reason} {stopped}; {len(rows)} attempts are in {path}", stop.reason)
    rows = _by_trajectory(rows, trajectories)
    write_rows(path, rows)
    report = write_report(rows, out, info)
    print_warnings(report, out)
    return report


def _by_trajectory(rows: list[dict[str, Any]], trajectories: list[Trajectory]) -> list[dict[str, Any]]:
    order = {t.key: i for i, t in enumerate(trajectories)}
    return sorted(rows, key=lambda r: (order.get(row_key(r)[:3], len(order)), r.get("turn", 1)))
