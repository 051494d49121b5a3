"""Evaluation: sample k completions per task, verify them all, write results as they come and a report.

    tritonrl eval --model Qwen/Qwen2.5-Coder-7B-Instruct --k 4 --temperature 0.7 --out out/base
    tritonrl eval --model runs/smoke --out out/rl            # a run dir: the model named in its manifest.json
    tritonrl eval --completions samples.jsonl --out out/x    # completions generated elsewhere
    tritonrl eval --solutions my_kernels/ --out out/y        # hand-written kernels, file stem = task name
    tritonrl eval --solutions kb_sol/ --tasks ~/KernelBench --level 2 --out out/kb   # 12.py -> problem 12
    tritonrl eval ... --out out/x --resume                   # after an interrupt: only the samples not yet judged
    tritonrl eval --model M --turns 3 --out out/t            # refinement: failed attempts get feedback, try again

Outputs in ``out_dir``: ``results.jsonl`` (``tritonrl.common.result_log``: one row per sample: task, level, sample index,
completion, extracted code, the full ``VerifyResult``), appended as each sample is judged, so an interrupt keeps
every finished sample; with a model, ``completions.jsonl`` (``tritonrl.evaluation.samples``), appended after each generate
call of ``eval.batch_size`` prompts, before any is judged; then ``report.json``, ``report.md`` and plots
(``tritonrl.evaluation.report``). Training and evaluation share the ``Verifier``, so their numbers cannot drift.

SIGTERM or SIGINT (``tritonrl.common.signals``) stops at the next safe point, which it says at once on stderr:
after the generate call under way (its completions saved), or after the verdicts under way (no new candidate
starts; those running finish and are kept); then ``tritonrl.errors.Stopped`` says what was kept (the CLI: exit
143 after SIGTERM, 130 after Ctrl-C). ``resume`` reuses both files: only what is missing is sampled or judged, and the report is the one an
uninterrupted run writes. A second signal ends it at once (Ctrl-C: ``KeyboardInterrupt``, then ``Interrupted``:
running candidates killed, exit 130).

Refinement turns (``--turns N``, ``eval.turns``; the loop is ``tritonrl.evaluation.refinement``): each sample is a
trajectory of up to N attempts; after a failed one the next prompt carries the task, the earlier attempts' code
and the verifier's feedback (``tritonrl.common.prompts.build_refinement_messages``); a trajectory stops at its first
correct attempt unless ``eval.refine_for_speed``. Each attempt is a row with ``turn`` (1, 2, ...). A completions
file can replay trajectories made elsewhere when its rows carry ``turn`` (and ``sample``); without those fields
it has one attempt per sample, and ``--turns`` with it is an error (refining needs a model to answer the
feedback).

A model is a spec that ``tritonrl.common.generation.resolve_model`` reads (a hub id, a model or adapter directory, or
``RUN_DIR[:stage]`` through its manifest), or any ``tritonrl.common.generation.Generator``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tritonrl.common.generation import (  # noqa: F401 (re-exported)
    Generator,
    ModelSource,
    load_generator,
    prompts_per_call,
    resolve_model,
)
from tritonrl.common.result_log import (
    Pending,
    finished_rows,
    judge,
    judged_rows,
    ordered,
    row_key,
    write_rows,
)
from tritonrl.common.signals import SignalHandlers, StopRequest
from tritonrl.config import EvalConfig, VerifyConfig
from tritonrl.errors import Interrupted, Stopped, UserError
from tritonrl.evaluation.refinement import ModelTurns, ReplayTurns, Trajectory, refine
from tritonrl.evaluation.report import RESULTS_JSONL, print_warnings, write_report
from tritonrl.evaluation.samples import COMPLETIONS_JSONL, SampleLog
from tritonrl.tasks.model import KernelTask
from tritonrl.util.atomic import write_atomic
from tritonrl.util.jsonl import iter_jsonl
from tritonrl.util.progress import Display

# What the first SIGINT/SIGTERM does, said at once (``SignalHandlers``): the job stops at the next safe point.
SAMPLING = "stopping after the generate call under way"
DRAINING = "stopping after the verdicts under way"


# ---------------------------------------------------------------- the three ways in
def evaluate(model: str | Generator, tasks: list[KernelTask], k: int = 1, gen: EvalConfig | None = None,
             verify: VerifyConfig | None = None, out_dir: str | Path = "out/eval",
             meta: dict[str, Any] | None = None, resume: bool = False, verifier: Any = None,
             display: Display | None = None) -> dict[str, Any]:
    """Generate k samples per task with ``model`` (a spec or a ``Generator``), verify, write the report.

    ``resume``: samples judged in ``out_dir``'s results are neither generated nor verified again, nor are
    completions in its ``completions.jsonl`` generated again; a verifier error's recorded completion is judged
    again. SIGTERM/SIGINT: ``Stopped`` at the next safe point (module docstring).
    ``gen.turns`` > 1: refinement trajectories (``refine``); ``verifier`` replaces the real one (tests);
    ``display``: what is shown while judging (``tritonrl.util.progress.Display``: each verdict, the progress line)."""
    from tritonrl.common.prompts import build_messages, load_template

    gen = gen or EvalConfig()
    info = {**_model_info(model, k, gen), **(meta or {})}
    check_sampling(Path(out_dir), model, gen, resume)
    stop = StopRequest()
    with SignalHandlers(stop, notice=SAMPLING):  # refine and verify_and_report put their own inside
        if gen.turns > 1:
            return refine(ModelTurns(model, gen), [Trajectory(t, i) for t in tasks for i in range(k)], gen.turns,
                          gen.refine_for_speed, verify, out_dir, info, resume=resume, verifier=verifier, stop=stop,
                          display=display)
        out = Path(out_dir)
        rows = finished_rows(out / RESULTS_JSONL) if resume else []
        done = {row_key(row) for row in judged_rows(rows)}
        # a verifier error's completion is judged again as it was, not sampled anew
        again = {row_key(r): r["completion"] for r in rows
                 if row_key(r) not in done and isinstance(r.get("completion"), str)}
        wanted = {key for t in tasks for key in _keys(t, k) if key not in done and key not in again}
        template = load_template(gen.prompt_template)
        prompts, keys = [build_messages(task, template) for task in tasks], [_keys(t, k) for t in tasks]
        log = SampleLog(out / COMPLETIONS_JSONL, resume)

        def generator() -> Generator:
            return load_generator(model, gen) if isinstance(model, str) else model

        texts = log.sample(generator, prompts, keys, prompts_per_call(model, gen), stop, wanted) if wanted else {}
        if texts is None:
            raise Stopped(f"eval: stopped by {stop.reason} after sampling {log.sampled(prompts, keys)}/{len(tasks)} "
                          f"prompts (completions in {log.path})", stop.reason)
        texts.update(again)
        # every sample, the judged ones too (verify_and_report skips them): the rows are kept in this order
        pending = [Pending(t, i, completion=texts.get(key)) for t in tasks for i, key in enumerate(_keys(t, k))]
        return verify_and_report(pending, verify, out_dir, info, resume=resume, verifier=verifier, stop=stop,
                                 display=display)


def _keys(task: KernelTask, k: int) -> list[tuple]:
    """The row keys (``tritonrl.common.result_log.row_key``) of a task's k single-turn samples."""
    return [(task.name, task.path, i, 1) for i in range(k)]


SAMPLING_JSON = "sampling.json"
SAMPLING_KEYS = ("temperature", "top_p", "max_new_tokens", "seed", "prompt_template", "backend", "turns")


def check_sampling(out: Path, model: str | Generator, gen: EvalConfig, resume: bool) -> None:
    """Record how ``out``'s samples are made (``sampling.json``: the model and ``SAMPLING_KEYS``); on ``resume``,
    refuse in one line when the earlier run's differ: its judged rows and kept completions would otherwise stand
    beside samples of another model or temperature. An ``out`` from before this record is resumed as it is."""
    now = {"model": _model_name(model), **{key: getattr(gen, key) for key in SAMPLING_KEYS}}
    path = out / SAMPLING_JSON
    if resume and path.is_file():
        try:
            before = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            before = {}
        changed = {k: (before.get(k), v) for k, v in now.items() if k in before and before[k] != v}
        if changed:
            what = ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in changed.items())
            raise UserError(f"--resume of {out} with other sampling than its earlier run ({what}): use the same "
                            "settings, or a new --out")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(now, indent=1) + "\n")


def _model_name(model: str | Generator) -> str:
    return model if isinstance(model, str) else type(model).__name__


def _model_info(model: str | Generator, k: int, gen: EvalConfig) -> dict[str, Any]:
    return {"model": _model_name(model), "k": k,
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
                         refine_for_speed: bool = False, verifier: Any = None,
                         display: Display | None = None) -> dict[str, Any]:
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
        return verify_and_report(pending, verify, out_dir, info, resume=resume, verifier=verifier, display=display)
    source = ReplayTurns(pending)
    trajectories = list({p.key[:3]: Trajectory(p.task, p.index) for p in pending}.values())
    turns = turns or max(p.turn for p in pending)
    return refine(source, trajectories, turns, refine_for_speed, verify, out_dir, info, resume, verifier,
                  display=display)


def read_solutions(directory: str | Path, tasks: list[KernelTask] | None = None,
                   level: int | None = None) -> list[Pending]:
    """Every ``*.py`` in ``directory`` matched to its task (``match_solutions``) and read: several files for one
    task are its samples 0, 1, ...; a file that is not UTF-8, or empty, is its sample's error (stage
    ``extract``). Files of another level than ``level`` are left out."""
    return _read_matched(match_solutions(directory, tasks, level)[0])


def match_solutions(directory: str | Path, tasks: list[KernelTask] | None = None,
                    level: int | None = None) -> tuple[list[tuple[KernelTask, Path]], list[Path]]:
    """(task, file) for every ``*.py`` in ``directory`` of ``level`` (None: any), in the tasks' order, and the
    files of other levels. Without ``tasks``, the task is the bundled (or ``$KERNELBENCH_DIR``) one named by the
    file's stem; with ``tasks`` (a KernelBench clone's, of every level), the one its stem names or numbers
    (``tritonrl.tasks.sources.match_problem``: ``12_Gemm_Multiply_LeakyReLU.py``, ``12.py``, ``level2_12.py``; a
    bare number found in several levels is taken at ``level``)."""
    from tritonrl.tasks import get_task
    from tritonrl.tasks.sources import match_problem, natural_key

    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"solutions directory not found: {directory}")
    files = sorted(directory.glob("*.py"), key=lambda f: natural_key(f.stem))
    if not files:
        raise UserError(f"no .py files in {directory}")
    matched = [(match_problem(f.stem, tasks, level) if tasks is not None else get_task(f.stem), f) for f in files]
    left_out = [f for task, f in matched if level is not None and task.level != level]
    matched = [(task, f) for task, f in matched if level is None or task.level == level]
    if not matched:
        raise UserError(f"no solution file of level {level} in {directory} ({len(left_out)} of other levels)")
    order = {t.key: i for i, t in enumerate(tasks or [])}
    matched.sort(key=lambda pair: order.get(pair[0].key, len(order)))  # the tasks' order; stable within a task
    return matched, left_out


def _read_matched(matched: list[tuple[KernelTask, Path]]) -> list[Pending]:
    counts: dict[str, int] = {}
    pending = []
    for task, f in matched:
        index = counts[task.key] = counts.get(task.key, -1) + 1
        try:
            code = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            pending.append(Pending(task, index, error=f"cannot read {f}: not UTF-8 text ({_where(exc)})", file=str(f)))
            continue
        empty = None if code.strip() else f"{f} is empty: no code to judge"
        pending.append(Pending(task, index, code=None if empty else code, error=empty, file=str(f)))
    return pending


def evaluate_solutions(directory: str | Path, verify: VerifyConfig | None = None,
                       out_dir: str | Path = "out/eval", meta: dict[str, Any] | None = None,
                       tasks: list[KernelTask] | None = None, resume: bool = False,
                       verifier: Any = None, level: int | None = None,
                       display: Display | None = None) -> dict[str, Any]:
    """Verify every solution file of ``level`` (``match_solutions``) and write the report; rows and report name
    the files, and its meta the files of other levels left out (``left_out``)."""
    matched, left_out = match_solutions(directory, tasks, level)
    info = {"solutions": str(directory), **(meta or {})}
    if left_out:
        info["left_out"] = f"{len(left_out)} files of other levels than {level}: " + \
            ", ".join(f.name for f in left_out[:5]) + (", ..." if len(left_out) > 5 else "")
    return verify_and_report(_read_matched(matched), verify, out_dir, info, resume=resume, verifier=verifier,
                             display=display)


# ---------------------------------------------------------------- verify, record, report
def verify_and_report(pending: list[Pending], verify: VerifyConfig | None, out_dir: str | Path,
                      meta: dict[str, Any] | None = None, verifier: Any = None,
                      resume: bool = False, stop: StopRequest | None = None,
                      display: Display | None = None) -> dict[str, Any]:
    """Verify every sample, appending each row to ``results.jsonl`` as it is judged, then write the report.

    ``resume``: rows already in ``results.jsonl`` stand and their samples are not verified again; otherwise the
    file starts empty. SIGTERM/SIGINT (or a raised ``stop``) ends it after the verdicts under way (no new
    candidate starts; those running finish and are kept): the finished rows stay, a report of them is written
    (meta ``interrupted``) and ``Stopped`` says how many. A second Ctrl-C (or a ``KeyboardInterrupt`` from
    elsewhere) stops at once (running candidates are killed), keeps the finished rows, and raises ``Interrupted``
    saying how to resume; no report is written then. Warnings go to stderr."""
    verify = verify or VerifyConfig()
    stop = stop or StopRequest()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / RESULTS_JSONL
    rows = judged_rows(finished_rows(path)) if resume else []
    done = {row_key(row) for row in rows}
    todo = [p for p in pending if p.key not in done]
    write_rows(path, rows)  # rewritten whole: a line cut short by a kill is dropped, not kept
    info = {"device": verify.device, "timeout_s": verify.timeout_s, **(meta or {})}
    if resume and rows:
        info["resumed_rows"] = len(rows)
    total = len(rows) + len(todo)
    try:
        with SignalHandlers(stop, notice=DRAINING):
            info["device"] = judge(todo, verify, verifier, path, rows, stop=stop, display=display)
    except KeyboardInterrupt:  # at once: no report (a second or two of plotting); --resume or `report` makes it
        raise Interrupted(f"interrupted: {len(rows)} of {total} samples are in {path}; the same command with "
                          "--resume judges only the rest") from None
    if stop.is_set() and len(rows) < total:
        if rows:
            write_report(ordered(rows, pending), out, {**info, "interrupted": True})
        raise Stopped(f"eval: stopped by {stop.reason} after {len(rows)}/{total} samples verified (in {path})",
                      stop.reason)
    rows = ordered(rows, pending)
    write_rows(path, rows)  # finished in any order; kept in the order of the samples
    report = write_report(rows, out, info)
    print_warnings(report, out)
    return report
