"""``results.jsonl``: one row per judged sample, appended as each verdict arrives, read back after an interrupt.

    rows = finished_rows(out / RESULTS_JSONL)          # an interrupted run's rows (a cut-short line is dropped)
    device = judge(pending, verify, verifier, out / RESULTS_JSONL, rows)   # verify, appending each row

A row: ``task``, ``level``, ``sample``, ``task_path``, ``completion``, ``code`` (extracted), ``result`` (the full
``VerifyResult``, its reward computed by ``tritonrl.common.reward`` when the verdict has none), ``file`` for a solution
file's sample, in refinement runs ``turn`` and ``prompt_context``, and ``shared_verdict`` when
``verify.share_verdicts`` gave it an identical earlier sample's verdict. On ``--resume`` a row whose verdict is a
verifier error is dropped (``judged_rows``), so its sample is judged again. Used by ``tritonrl.evaluation.evaluate`` and
``tritonrl.evaluation.refinement``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonrl.config import VerifyConfig
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
    file: str | None = None  # ``--solutions``: the file the code came from (rows and reports name it)
    shared: bool = False  # ``verify.share_verdicts``: this sample's verdict is an identical earlier sample's

    @property
    def key(self) -> tuple:
        return (self.task.name, self.task.path, self.index, self.turn or 1)


def judge(todo: list[Pending], verify: VerifyConfig, verifier: Any, path: Path, rows: list[dict],
          desc: str = "eval", stop: Any = None, display: Any = None) -> str:
    """Verify ``todo``, appending each row to ``path`` (and ``rows``) as it finishes, under a progress line
    (``desc``; on a terminal only) and shown as ``display`` (``tritonrl.util.progress.Display``) says; the device used.
    A raised ``stop`` (``tritonrl.common.signals.StopRequest``) ends it after the verdicts under way: the caller
    sees fewer rows than samples."""
    from tritonrl.util.progress import Display, ProgressLine

    display = display or Display()
    with ProgressLine(len(todo), desc, enabled=display.progress) as line:
        def land(p: Pending, result: Any) -> None:  # counted before shown: a Ctrl-C between the two loses nothing
            rows.append(_append(path, _row(p, result)))
            if display.verdict is not None:
                with line.printing():
                    display.verdict(rows[-1])
            line.update(result)

        return _judge(todo, verify, verifier, land, stop)


def _judge(todo: list[Pending], verify: VerifyConfig, verifier: Any, land: Any, stop: Any) -> str:
    from tritonrl.verify import VerifyItem
    from tritonrl.verify.shared.verdict import Stage, VerifyResult

    for p in todo:
        if p.error is not None:
            land(p, VerifyResult(Stage.EXTRACT, error=p.error, reward=0.0, elapsed_s=0.0))
    todo = [p for p in todo if p.error is None]
    copies = _duplicates(todo) if verify.share_verdicts else {}
    todo = [p for i, p in enumerate(todo) if i not in copies.get("of", {})]
    items = [VerifyItem(p.task, completion=p.completion, code=p.code) for p in todo]
    owned = None
    if verifier is None:
        from tritonrl.verify.parent.backends import make_verifier

        verifier = owned = make_verifier(verify)  # verify.backend: local, ray or http
    try:
        from tritonrl.verify.parent.known_good import check_known_good, wanted

        if owned is not None and items and wanted(verify):  # a verifier broken here would score every run low
            check_known_good(verifier, "the evaluation")
        device = getattr(verifier, "device", None) or verify.device
        for index, result in stream_verdicts(verifier, items, stop):
            result = _size_limited(result, todo[index].task, verify, device)
            land(todo[index], result)
            for copy in copies.get("by", {}).get(id(todo[index]), ()):
                land(dataclasses.replace(copy, shared=True), dataclasses.replace(result))
    finally:
        if owned is not None:
            owned.close()  # on Ctrl-C or a stop too: kills the running candidates' process groups
    return device


def _duplicates(todo: list[Pending]) -> dict[str, dict]:
    """``verify.share_verdicts``: the samples whose (task, extracted code) an earlier sample of ``todo`` has
    (``of``: their positions) and, by the first sample's id, the copies that take its verdict (``by``)."""
    from tritonrl.extract import extract_code

    first: dict[tuple, Pending] = {}
    of: dict[int, Pending] = {}
    by: dict[int, list[Pending]] = {}
    for i, p in enumerate(todo):
        code = p.code if p.code is not None else extract_code(p.completion or "")
        key = (p.task.name, p.task.path, code)
        if code is None or key not in first:
            first.setdefault(key, p)
            continue
        of[i] = first[key]
        by.setdefault(id(first[key]), []).append(p)
    return {"of": of, "by": by}


def stream_verdicts(verifier: Any, items: list, stop: Any = None) -> Any:
    """(index, result) as each finishes where the verifier can (``verify_iter``), else all at the end. A raised
    ``stop`` drains the stream: items not started are not judged, those under way finish and are given
    (``verify_iter(items, stop)``); results ``verify_many`` already returned are all given. Raised before the
    first, it gives none."""
    if not items or (stop is not None and stop.is_set()):
        return
    if not hasattr(verifier, "verify_iter"):
        results = verifier.verify_many(items)
        if len(results) != len(items):
            raise RuntimeError(f"verifier returned {len(results)} results for {len(items)} samples")
        yield from enumerate(results)
        return
    stream = verifier.verify_iter(items, stop=stop)
    try:
        yield from stream
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def _size_limited(result: Any, task: KernelTask, verify: VerifyConfig, device: str) -> Any:
    from tritonrl.verify.parent.plan import cpu_oversize, mark_cpu_size_limit

    return mark_cpu_size_limit(result, device == "cpu" and cpu_oversize(task, verify, device))


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
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


def judged_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a resumed run keeps: not a verifier error (the verifier failed, not the kernel: judged again), nor
    a trajectory's later attempts after one (they answered feedback on the verifier's failure)."""
    from tritonrl.verify.shared.flags import Flag

    first_error: dict[tuple, int] = {}
    for row in rows:
        if Flag.VERIFIER_ERROR.value in row["result"].get("flags", []):
            key = row_key(row)[:3]
            first_error[key] = min(first_error.get(key, row_key(row)[3]), row_key(row)[3])
    return [row for row in rows if row_key(row)[3] < first_error.get(row_key(row)[:3], 1 << 30)]


def row_key(row: dict[str, Any]) -> tuple:
    return (row["task"], row.get("task_path"), row.get("sample", 0), row.get("turn", 1))


def ordered(rows: list[dict[str, Any]], pending: list[Pending]) -> list[dict[str, Any]]:
    """Rows in the order of ``pending`` (the order they finished in is not meaningful); others after."""
    order = {p.key: i for i, p in enumerate(pending)}
    return sorted(rows, key=lambda row: order.get(row_key(row), len(order)))


def _row(p: Pending, result) -> dict[str, Any]:
    code = result.code if result.code is not None else p.code
    if code is None and p.completion is not None:
        from tritonrl.extract import extract_code

        code = extract_code(p.completion)
    if result.reward is None:  # verdicts come without rewards: the same pure function training uses
        from tritonrl.common.reward import compute_reward

        result.reward = compute_reward(result)
    row = {"task": p.task.name, "level": p.task.level, "sample": p.index, "task_path": p.task.path,
           "completion": p.completion, "code": code, "result": result.to_dict()}
    if p.file is not None:
        row["file"] = p.file
    if p.turn is not None:
        row["turn"] = p.turn
    if p.context is not None:
        row["prompt_context"] = p.context
    if p.shared:
        row["shared_verdict"] = True
    return row
