"""Evaluation: sample k completions per task, verify them all, write results as they come and a report.

    tritonrl eval --model Qwen/Qwen2.5-Coder-7B-Instruct --k 4 --temperature 0.7 --out out/base
    tritonrl eval --model runs/smoke --out out/rl            # a run dir: the model named in its manifest.json
    tritonrl eval --completions samples.jsonl --out out/x    # completions generated elsewhere
    tritonrl eval --solutions my_kernels/ --out out/y        # hand-written kernels, file stem = task name
    tritonrl eval --solutions kb_sol/ --tasks ~/KernelBench --level 2 --out out/kb   # 12.py -> problem 12
    tritonrl eval ... --out out/x --resume                   # after an interrupt: only the samples not yet judged
    tritonrl eval --model M --turns 3 --out out/t            # refinement: failed attempts get feedback, try again

Outputs in ``out_dir``: ``results.jsonl`` (one row per sample: task, level, sample index, completion, extracted
code, the full ``VerifyResult``), appended as each sample is judged, so an interrupt keeps every finished sample;
then ``report.json``, ``report.md`` and plots (``tritonrl.report``). Training and evaluation share the
``Verifier``, so their numbers cannot drift.

Refinement turns (``--turns N``, ``eval.turns``): each sample is a trajectory of up to N attempts; after a
failed one the next prompt carries the task, the earlier attempts' code and the verifier's feedback
(``tritonrl.prompts.build_refinement_messages``); a trajectory stops at its first correct attempt unless
``eval.refine_for_speed``. Each attempt is a row with ``turn`` (1, 2, ...). A completions file can replay
trajectories made elsewhere when its rows carry ``turn`` (and ``sample``); without those fields it has one
attempt per sample, and ``--turns`` with it is an error (refining needs a model to answer the feedback).

A model is a spec that ``tritonrl.generation.resolve_model`` reads (a hub id, a model or adapter directory, or
``RUN_DIR[:stage]`` through its manifest), or any ``tritonrl.generation.Generator``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritonrl.config import EvalConfig, VerifyConfig
from tritonrl.errors import TaskError, UserError
from tritonrl.generation import Generator, ModelSource, load_generator, resolve_model  # noqa: F401 (re-exported)
from tritonrl.jsonl import iter_jsonl
from tritonrl.report import RESULTS_JSONL, print_warnings, write_report
from tritonrl.tasks.model import KernelTask


@dataclass
class Pending:
    """One sample waiting for its verdict: a completion to extract from, or code as written."""

    task: KernelTask
    index: int
    completion: str | None = None
    code: str | None = None
    error: str | None = None  # the input could not be read (not UTF-8): this sample's verdict, without running
    turn: int | None = None  # refinement runs: 1, 2, ...; None: a single-turn run (rows carry no turn)
    context: dict[str, Any] | None = None  # refinement runs: what the prompt kept (RefinementPrompt.context)

    @property
    def key(self) -> tuple:
        return (self.task.name, self.task.path, self.index, self.turn or 1)


# ---------------------------------------------------------------- tasks
def select_tasks(spec: str, level: int | None = None, max_tasks: int | None = None) -> list[KernelTask]:
    """``bundled``, a KernelBench dir or task file, or comma-separated bundled names; then level and count.

    Ordered by level, then by name with numbers by value (KernelBench's ``2_...`` before ``10_...``)."""
    from tritonrl.tasks import get_task, load_tasks
    from tritonrl.tasks.sources import natural_key

    if spec == "bundled" or Path(spec).exists():
        tasks = load_tasks(spec, level)
    else:
        tasks = [get_task(name.strip()) for name in spec.split(",") if name.strip()]
        tasks = [t for t in tasks if level is None or t.level == level]
    tasks = sorted(tasks, key=lambda t: (t.level, natural_key(t.name)))[:max_tasks]
    if not tasks:
        raise TaskError(f"no tasks selected by {spec!r}" + (f" at level {level}" if level else ""))
    return tasks


# ---------------------------------------------------------------- the three ways in
def evaluate(model: str | Generator, tasks: list[KernelTask], k: int = 1, gen: EvalConfig | None = None,
             verify: VerifyConfig | None = None, out_dir: str | Path = "out/eval",
             meta: dict[str, Any] | None = None, resume: bool = False, verifier: Any = None) -> dict[str, Any]:
    """Generate k samples per task with ``model`` (a spec or a ``Generator``), verify, write the report.

    ``resume``: tasks whose k samples are all in ``out_dir``'s results are neither generated nor verified again.
    ``gen.turns`` > 1: refinement trajectories (``refine``); ``verifier`` replaces the real one (tests)."""
    from tritonrl.prompts import build_messages, load_template

    gen = gen or EvalConfig()
    if gen.turns > 1:
        return refine(ModelTurns(model, gen), [Trajectory(t, i) for t in tasks for i in range(k)], gen.turns,
                      gen.refine_for_speed, verify, out_dir, {**_model_info(model, k, gen), **(meta or {})},
                      resume=resume, verifier=verifier)
    done = {row_key(row) for row in finished_rows(Path(out_dir) / RESULTS_JSONL)} if resume else set()
    todo = [t for t in tasks if any((t.name, t.path, i, 1) not in done for i in range(k))]
    completions = []
    if todo:
        generator = load_generator(model, gen) if isinstance(model, str) else model
        template = load_template(gen.prompt_template)
        completions = generator.generate([build_messages(task, template) for task in todo], k)
    pending = [Pending(task, i, completion=text) for task, texts in zip(todo, completions)
               for i, text in enumerate(texts)]
    info = {**_model_info(model, k, gen), **(meta or {})}
    return verify_and_report(pending, verify, out_dir, info, resume=resume, verifier=verifier)


def _model_info(model: str | Generator, k: int, gen: EvalConfig) -> dict[str, Any]:
    return {"model": model if isinstance(model, str) else type(model).__name__, "k": k,
            "temperature": gen.temperature, "max_new_tokens": gen.max_new_tokens}


def read_completions(path: str | Path) -> list[Pending]:
    """``{"task": name-or-path, "completion": text}`` per line; errors name the line (docs/evaluation.md).

    Rows with ``turn`` (1, 2, ...; then every row needs it) are attempts of the trajectory ``(task, sample)``
    (``sample`` defaults to 0), for ``refine`` to replay."""
    from tritonrl.tasks import get_task

    path = Path(path)
    if not path.is_file():
        raise UserError(f"completions file not found: {path}")
    tasks: dict[str, KernelTask] = {}
    counts: dict[str, int] = {}
    pending = []
    try:
        for lineno, row in iter_jsonl(path):
            if not isinstance(row, dict) or not isinstance(row.get("task"), str) or "completion" not in row:
                raise UserError(f"{path}:{lineno}: need an object with a string 'task' and a 'completion'")
            name = row["task"]
            if name not in tasks:
                try:
                    tasks[name] = get_task(_task_spec(name, path.parent))
                except UserError as exc:
                    raise UserError(f"{path}:{lineno}: {exc}") from None
            index = counts[name] = counts.get(name, -1) + 1
            pending.append(Pending(tasks[name], index, completion=row["completion"]))
            if "turn" in row or "sample" in row:
                pending[-1].index, pending[-1].turn = _trajectory_fields(row, path, lineno)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({_where(exc)}); JSONL files must be UTF-8") from None
    if not pending:
        raise UserError(f"{path} holds no completions")
    if any(p.turn is not None for p in pending):
        _check_trajectories(pending, path)
    return pending


def _trajectory_fields(row: dict[str, Any], path: Path, lineno: int) -> tuple[int, int | None]:
    values = (row.get("sample", 0), row.get("turn"))
    if not isinstance(values[0], int) or values[0] < 0 or not isinstance(values[1], (int, type(None))) or \
            (values[1] is not None and values[1] < 1):
        raise UserError(f"{path}:{lineno}: 'sample' must be an integer >= 0 and 'turn' an integer >= 1")
    return values


def _check_trajectories(pending: list[Pending], path: Path) -> None:
    """Every row has a turn, and each trajectory's turns are 1..n, each once."""
    turns: dict[tuple, list[int]] = {}
    for p in pending:
        if p.turn is None:
            raise UserError(f"{path}: some rows have 'turn' and some do not; give every row a turn (1, 2, ...)")
        turns.setdefault(p.key[:3], []).append(p.turn)
    for (task, _, sample), found in turns.items():
        if sorted(found) != list(range(1, len(found) + 1)):
            raise UserError(f"{path}: task {task} sample {sample} has turns {sorted(found)}; need 1..n, each once")


def _task_spec(name: str, base: Path) -> str:
    """A bundled name as is; a task file path as given, else relative to the completions file."""
    if name.endswith(".py") and not Path(name).exists() and (base / name).exists():
        return str(base / name)
    return name


def _where(exc: UnicodeDecodeError) -> str:
    return f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"


def evaluate_completions(path: str | Path, verify: VerifyConfig | None = None, out_dir: str | Path = "out/eval",
                         meta: dict[str, Any] | None = None, resume: bool = False, turns: int | None = None,
                         refine_for_speed: bool = False, verifier: Any = None) -> dict[str, Any]:
    """Verify completions generated elsewhere (see ``read_completions``) and write the report.

    A file whose rows carry ``turn`` is replayed as refinement trajectories (at most ``turns`` turns, default
    all); ``turns`` > 1 with a file of single attempts is an error."""
    pending = read_completions(path)
    info = {"completions": str(path), **(meta or {})}
    if pending[0].turn is None:
        if turns is not None and turns > 1:
            raise UserError(f"--turns {turns}: {path} has one attempt per sample (no 'turn' fields); refinement "
                            "needs a model to answer the feedback (--model), or a file whose rows carry 'turn' "
                            "and 'sample' (docs/evaluation.md#refinement-turns)")
        return verify_and_report(pending, verify, out_dir, info, resume=resume, verifier=verifier)
    source = ReplayTurns(pending)
    trajectories = list({p.key[:3]: Trajectory(p.task, p.index) for p in pending}.values())
    turns = turns or max(p.turn for p in pending)
    return refine(source, trajectories, turns, refine_for_speed, verify, out_dir, info, resume, verifier)


def read_solutions(directory: str | Path, tasks: list[KernelTask] | None = None) -> list[Pending]:
    """Every ``*.py`` in ``directory`` is the code for one task: without ``tasks``, the bundled (or
    ``$KERNELBENCH_DIR``) task named by its file stem; with ``tasks``, the one its stem names or numbers
    (``tritonrl.tasks.sources.match_problem``: ``12_Gemm_Multiply_LeakyReLU.py``, ``12.py``, ``level2_12.py``).
    Several files for one task are its samples 0, 1, ...; a file that is not UTF-8 is its sample's error."""
    from tritonrl.tasks import get_task
    from tritonrl.tasks.sources import match_problem, natural_key

    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"solutions directory not found: {directory}")
    files = sorted(directory.glob("*.py"), key=lambda f: natural_key(f.stem))
    if not files:
        raise UserError(f"no .py files in {directory}")
    matched = [(match_problem(f.stem, tasks) if tasks is not None else get_task(f.stem), f) for f in files]
    order = {t.key: i for i, t in enumerate(tasks or [])}
    matched.sort(key=lambda pair: order.get(pair[0].key, len(order)))  # the tasks' order; stable within a task
    counts: dict[str, int] = {}
    pending = []
    for task, f in matched:
        index = counts[task.key] = counts.get(task.key, -1) + 1
        try:
            pending.append(Pending(task, index, code=f.read_text(encoding="utf-8")))
        except UnicodeDecodeError as exc:
            pending.append(Pending(task, index, error=f"cannot read {f}: not UTF-8 text ({_where(exc)})"))
    return pending


def evaluate_solutions(directory: str | Path, verify: VerifyConfig | None = None,
                       out_dir: str | Path = "out/eval", meta: dict[str, Any] | None = None,
                       tasks: list[KernelTask] | None = None, resume: bool = False) -> dict[str, Any]:
    return verify_and_report(read_solutions(directory, tasks), verify, out_dir,
                             {"solutions": str(directory), **(meta or {})}, resume=resume)


# ---------------------------------------------------------------- refinement turns
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
    behaves as in ``verify_and_report``."""
    from tritonrl.verify.result import VerifyResult

    verify = verify or VerifyConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_JSONL
    rows = sorted(finished_rows(path), key=lambda r: r.get("turn", 1)) if resume else []
    _write_rows(path, rows)
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
            info["device"] = _judge(pending, verify, verifier, path, new_rows)
            rows += new_rows
            record(new_rows)
    except KeyboardInterrupt:
        print(f"tritonrl: interrupted: {len(rows)} attempts are in {path}; the same command with --resume "
              "continues each trajectory from its last judged turn", file=sys.stderr)
        if rows:
            write_report(_by_trajectory(rows, trajectories), out, {**info, "interrupted": True})
        raise
    finally:
        if owned is not None:
            owned.close()
    rows = _by_trajectory(rows, trajectories)
    _write_rows(path, rows)
    report = write_report(rows, out, info)
    print_warnings(report)
    return report


def _by_trajectory(rows: list[dict[str, Any]], trajectories: list[Trajectory]) -> list[dict[str, Any]]:
    order = {t.key: i for i, t in enumerate(trajectories)}
    return sorted(rows, key=lambda r: (order.get(row_key(r)[:3], len(order)), r.get("turn", 1)))


# ---------------------------------------------------------------- verify, record, report
def verify_and_report(pending: list[Pending], verify: VerifyConfig | None, out_dir: str | Path,
                      meta: dict[str, Any] | None = None, verifier: Any = None,
                      resume: bool = False) -> dict[str, Any]:
    """Verify every sample, appending each row to ``results.jsonl`` as it is judged, then write the report.

    ``resume``: rows already in ``results.jsonl`` stand and their samples are not verified again; otherwise the
    file starts empty. Ctrl-C stops at once (running candidates are killed), keeps the finished rows, writes a
    report of them, says how to resume, and re-raises ``KeyboardInterrupt``. Warnings go to stderr."""
    verify = verify or VerifyConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_JSONL
    rows = finished_rows(path) if resume else []
    done = {row_key(row) for row in rows}
    todo = [p for p in pending if p.key not in done]
    _write_rows(path, rows)  # rewritten whole: a line cut short by a kill is dropped, not kept
    info = {"device": verify.device, "timeout_s": verify.timeout_s, **(meta or {})}
    if resume and rows:
        info["resumed_rows"] = len(rows)
    total = len(rows) + len(todo)
    try:
        info["device"] = _judge(todo, verify, verifier, path, rows)
    except KeyboardInterrupt:
        print(f"tritonrl: interrupted: {len(rows)} of {total} samples are in {path}; the same command with "
              "--resume judges only the rest", file=sys.stderr)
        if rows:
            write_report(_ordered(rows, pending), out, {**info, "interrupted": True})
        raise
    rows = _ordered(rows, pending)
    _write_rows(path, rows)  # finished in any order; kept in the order of the samples
    report = write_report(rows, out, info)
    print_warnings(report)
    return report


def _judge(todo: list[Pending], verify: VerifyConfig, verifier: Any, path: Path, rows: list[dict]) -> str:
    """Verify ``todo``, appending each row to ``path`` (and ``rows``) as it finishes; the device used."""
    from tritonrl.verify import VerifyItem
    from tritonrl.verify.result import Stage, VerifyResult

    for p in todo:
        if p.error is not None:
            rows.append(_append(path, _row(p, VerifyResult(Stage.EXTRACT, error=p.error, reward=0.0))))
    todo = [p for p in todo if p.error is None]
    items = [VerifyItem(p.task, completion=p.completion, code=p.code) for p in todo]
    owned = None
    if verifier is None:
        from tritonrl.verify.backends import make_verifier

        verifier = owned = make_verifier(verify)  # verify.backend: local or ray
    try:
        device = getattr(verifier, "device", None) or verify.device
        for index, result in _stream(verifier, items):
            rows.append(_append(path, _row(todo[index], _size_limited(result, todo[index].task, verify, device))))
    finally:
        if owned is not None:
            owned.close()  # on Ctrl-C too: kills the running candidates' process groups
    return device


def _stream(verifier: Any, items: list) -> Any:
    """(index, result) as each finishes where the verifier can (``verify_iter``), else all at the end."""
    if not items:
        return iter(())
    if hasattr(verifier, "verify_iter"):
        return verifier.verify_iter(items)
    results = verifier.verify_many(items)
    if len(results) != len(items):
        raise RuntimeError(f"verifier returned {len(results)} results for {len(items)} samples")
    return enumerate(results)


def _size_limited(result: Any, task: KernelTask, verify: VerifyConfig, device: str) -> Any:
    from tritonrl.verify.plan import cpu_oversize, mark_cpu_size_limit

    return mark_cpu_size_limit(result, device == "cpu" and cpu_oversize(task, verify, device))


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.replace(path)


def _append(path: Path, row: dict[str, Any]) -> dict[str, Any]:
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    return row


def finished_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an interrupted run's ``results.jsonl`` (none if absent); a malformed line (cut short by a
    kill) is dropped, so its sample is judged again."""
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and {"task", "level", "result"} <= set(row):
            rows.append(row)
    return rows


def row_key(row: dict[str, Any]) -> tuple:
    return (row["task"], row.get("task_path"), row.get("sample", 0), row.get("turn", 1))


def _ordered(rows: list[dict[str, Any]], pending: list[Pending]) -> list[dict[str, Any]]:
    """Rows in the order of ``pending`` (the order they finished in is not meaningful); others after."""
    order = {p.key: i for i, p in enumerate(pending)}
    return sorted(rows, key=lambda row: order.get(row_key(row), len(order)))


def _row(p: Pending, result) -> dict[str, Any]:
    code = result.code if result.code is not None else p.code
    if code is None and p.completion is not None:
        from tritonrl.extract import extract_code

        code = extract_code(p.completion)
    if result.reward is None:  # verdicts come without rewards: the same pure function training uses
        from tritonrl.reward import compute_reward

        result.reward = compute_reward(result)
    row = {"task": p.task.name, "level": p.task.level, "sample": p.index, "task_path": p.task.path,
           "completion": p.completion, "code": code, "result": result.to_dict()}
    if p.turn is not None:
        row["turn"] = p.turn
    if p.context is not None:
        row["prompt_context"] = p.context
    return row
