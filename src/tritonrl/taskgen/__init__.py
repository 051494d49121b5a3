"""Procedural KernelBench-format tasks with verified Triton references, split by op combination.

    tritonrl tasks generate --n 64 --seed 0 --split train --out data/gen/train [--kernelbench DIR] [--shape-scale 8]
    from tritonrl.taskgen import generate_tasks
    report = generate_tasks(64, seed=0, split="heldout", out="data/gen/heldout")

Families (``tritonrl.taskgen.families``): elementwise chains, row reductions with prologue/epilogue, GEMM
plus epilogue. Each draft's *signature* is its family and ordered op names (constants and shapes left out); a
signature is held out when a hash of it (salted with ``split_salt``) falls in the first ``heldout_share`` of the hash
range, for every seed, so held-out tasks combine ops in ways no training task does. A new salt draws a new partition:
a study whose held-out split must be fresh takes a salt never used before. Drafts are dropped when of the other split, a duplicate
(normalized AST of the task), a KernelBench match (``tritonrl.tasks.kernelbook``'s index), or when our Verifier
rejects the reference; every drop is counted in ``generation_report.json``.

Layout written (what ``tritonrl.tasks.load_tasks`` reads, references included): ``OUT/level{1,2}/NAME.py``,
``OUT/solutions/NAME.py``, ``OUT/tasks.jsonl`` (name, family, signature, split) and ``OUT/generation_report.json``.
The same arguments give the same bytes (nothing time-dependent is written).

``verify_references=False`` (``--no-verify``) keeps every draft without judging its reference: a prompt stream for RL,
whose reward compares against the PyTorch ``Model`` and never reads the reference. The report says
``references_verified: false``; a reference taken from such a directory (to fine-tune on, say) must be judged first.

Resumable: while it runs, ``OUT/generation_progress.jsonl`` holds the arguments (first line), then each judged
reference's verdict, appended as it arrives; an accepted task's files are written at once. SIGTERM or SIGINT
(``tritonrl.common.signals``) stops it after the verdict under way (running references are stopped) with
``tritonrl.errors.Stopped``. Run again with the same arguments, it draws the same drafts (one seeded stream) and
takes the recorded verdicts instead of verifying again, so it ends with exactly the tasks an uninterrupted run
writes; other arguments start afresh. ``tasks.jsonl`` and then ``generation_report.json`` are written last, only
when all ``n`` tasks are kept: the report's presence means the directory is complete; the progress file is then
removed.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tritonrl.errors import Stopped, UserError
from tritonrl.taskgen.families import Draft, draw
from tritonrl.tasks.model import KernelTask
from tritonrl.util.astlock import parse_source

__all__ = ["SPLITS", "GenerationReport", "generate_tasks", "split_of"]

SPLITS = ("train", "heldout")
PROGRESS_JSONL = "generation_progress.jsonl"
HELDOUT_SHARE = 0.25
SPLIT_SALT = "tritonrl-split"  # the salt of every split made before 2026-11-27; a new study takes a new one
MAX_DRAWS_PER_TASK = 40


@dataclass
class GenerationReport:
    """What generation drew and why each dropped draft went."""

    n: int
    seed: int
    split: str
    shape_scale: int
    split_salt: str = SPLIT_SALT
    drawn: int = 0
    other_split: int = 0
    duplicate: int = 0
    contaminated: int = 0
    verified: int = 0
    verify_failed: int = 0
    kept: int = 0
    families: dict[str, int] = field(default_factory=dict)
    signatures: int = 0
    failures: list[dict] = field(default_factory=list)
    kernelbench: str | None = None  # the clone drafts were checked against; None: overlap not checked
    references_verified: bool = True  # False: drafts kept unjudged (an RL prompt stream; module docstring)

    def table(self) -> str:
        from tritonrl.tasks.kernelbook import overlap_cell

        rows = [("drawn", self.drawn), ("other split", self.other_split), ("duplicate", self.duplicate),
                ("KernelBench overlap", overlap_cell(self.contaminated, self.kernelbench)),
                ("reference verified", self.verified),
                ("reference failed", self.verify_failed), ("kept", self.kept)]
        return "\n".join(f"{label:<20} {count:>7}" for label, count in rows)


def split_of(signature: str, heldout_share: float = HELDOUT_SHARE, salt: str = SPLIT_SALT) -> str:
    """``heldout`` for a fixed share of op-combination signatures, decided by a salted hash (not by the seed): the
    same salt gives the same partition whatever the seed; a salt never used before gives a held-out split that no
    earlier run has seen, trained on or been tuned against."""
    if not salt:
        raise UserError("the split salt must not be empty")
    bucket = int(hashlib.sha256(f"{salt}:{signature}".encode()).hexdigest()[:8], 16) / 0x100000000
    return "heldout" if bucket < heldout_share else "train"


def task_name(draft: Draft) -> str:
    digest = hashlib.sha256(draft.source.encode()).hexdigest()[:8]
    return f"gen_{draft.family}_{'_'.join(draft.ops[:5])}_{digest}"


def generate_tasks(n: int, seed: int, split: str, out: str | Path, kernelbench_dir: str | Path | None = None,
                   shape_scale: int = 1, heldout_share: float = HELDOUT_SHARE, verify_config=None,
                   verifier=None, split_salt: str = SPLIT_SALT, verify_references: bool = True) -> GenerationReport:
    """Write ``n`` verified tasks of ``split`` to ``out`` (replacing what a previous run with other arguments wrote
    there; resuming one with the same arguments that was stopped: module docstring)."""
    from tritonrl.common.signals import SignalHandlers, StopRequest

    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; choose {' or '.join(SPLITS)}")
    if n < 1:
        raise UserError("--n must be at least 1")
    split_of("", heldout_share, split_salt)  # an empty salt fails here, before anything is written
    report = GenerationReport(n=n, seed=seed, split=split, shape_scale=shape_scale, split_salt=split_salt,
                              kernelbench=str(kernelbench_dir) if kernelbench_dir is not None else None,
                              references_verified=verify_references)
    index = _kernelbench_index(kernelbench_dir)
    verify = verify_config or default_verify_config()
    progress = _Progress(Path(out), {"n": n, "seed": seed, "split": split, "shape_scale": shape_scale,
                                     "heldout_share": heldout_share, "split_salt": split_salt, "kernelbench": report.kernelbench,
                                     "verify": dataclasses.asdict(verify) if verify_references else None})
    rng = random.Random(f"tritonrl-generate:{seed}")
    seen: set[str] = set()
    kept: list[tuple[Draft, KernelTask]] = []
    stop = StopRequest()
    with SignalHandlers(stop, notice="stopping after the verdicts under way"):
        while len(kept) < n and report.drawn < n * MAX_DRAWS_PER_TASK:
            batch = _draw_batch(rng, n - len(kept), (split, heldout_share, split_salt), shape_scale, seen, index,
                                report)
            accepted = (_verified(batch, report, verify, verifier, progress, stop) if verify_references
                        else batch)
            if accepted is None:
                raise Stopped(f"tasks generate: stopped by {stop.reason} after {progress.accepted}/{n} {split} "
                              f"tasks accepted ({len(progress.verdicts)} references judged, in {progress.path})",
                              stop.reason)
            kept += accepted
    if len(kept) < n:
        raise UserError(f"only {len(kept)} of {n} {split} tasks after {report.drawn} draws "
                        f"({report.verify_failed} references failed verification)")
    _write(out, kept, report)
    progress.path.unlink(missing_ok=True)
    return report


class _Progress:
    """``OUT/generation_progress.jsonl``: the arguments, then one verdict per judged reference (by task name and
    source digest), appended as each arrives; an accepted task's files are written before its verdict."""

    def __init__(self, out: Path, args: dict[str, Any]):
        self.out, self.path = out, out / PROGRESS_JSONL
        header = json.loads(json.dumps({"args": args}, sort_keys=True, default=str))
        self.verdicts: dict[str, dict] = {}
        lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines() if self.path.is_file() else []
        if lines and _parse(lines[0]) == header:
            for line in lines[1:]:
                row = _parse(line)  # None: a line cut short by a kill, judged again
                if row is not None and {"key", "correct", "stage", "error"} <= set(row):
                    self.verdicts[row["key"]] = row
            return
        for sub in ("level1", "level2", "solutions"):  # other arguments, or none: start afresh
            shutil.rmtree(out / sub, ignore_errors=True)
        for name in ("tasks.jsonl", "generation_report.json"):
            (out / name).unlink(missing_ok=True)
        out.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(header, sort_keys=True) + "\n")

    @property
    def accepted(self) -> int:
        return sum(v["correct"] for v in self.verdicts.values())

    def get(self, task: KernelTask) -> dict | None:
        return self.verdicts.get(_key(task))

    def add(self, task: KernelTask, result) -> dict:
        """Record ``result`` (a ``VerifyResult``): the task's files first when it is accepted. A verifier error
        is used by this run but not recorded (a rerun judges that reference again)."""
        from tritonrl.verify.shared.flags import Flag

        verdict = {"key": _key(task), "name": task.name, "correct": bool(result.correct), "stage": str(result.stage),
                   "error": (result.error or "")[:300]}
        if verdict["correct"]:
            _write_task(self.out, task)
        if Flag.VERIFIER_ERROR.value not in (result.flags or []):
            self.verdicts[verdict["key"]] = verdict
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(verdict, sort_keys=True) + "\n")
        return verdict


def _key(task: KernelTask) -> str:
    return hashlib.sha256(f"{task.source}\0{task.solution}".encode()).hexdigest()


def _parse(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def _draw_batch(rng, want, partition, shape_scale, seen, index, report) -> list[tuple[Draft, KernelTask]]:
    """Up to ``want`` new drafts of ``partition`` = (split, held-out share, salt)."""
    split, heldout_share, salt = partition
    batch = []
    while len(batch) < want and report.drawn < report.n * MAX_DRAWS_PER_TASK:
        draft = draw(rng, shape_scale)
        report.drawn += 1
        if split_of(draft.signature, heldout_share, salt) != split:
            report.other_split += 1
            continue
        tree = parse_source(draft.source)
        key = ast.dump(_without_docstrings(tree), annotate_fields=False)
        if key in seen:
            report.duplicate += 1
            continue
        seen.add(key)
        if index is not None and index.matches(next(n for n in tree.body if getattr(n, "name", "") == "Model")):
            report.contaminated += 1
            continue
        task = KernelTask(name=task_name(draft), level=draft.level, source=draft.source, origin="file",
                          solution=draft.solution, meta={"family": draft.family, "signature": draft.signature})
        batch.append((draft, task))
    return batch


def _without_docstrings(tree: ast.Module) -> ast.AST:
    from tritonrl.tasks.kernelbook import _strip_docstrings

    return _strip_docstrings(tree)


def _kernelbench_index(kernelbench_dir):
    if kernelbench_dir is None:
        return None
    from tritonrl.tasks import decontamination_dir
    from tritonrl.tasks.kernelbook import _KernelBenchIndex

    return _KernelBenchIndex(decontamination_dir(kernelbench_dir))


def _verified(batch, report: GenerationReport, verify_config, verifier, progress: _Progress,
              stop) -> list[tuple[Draft, KernelTask]] | None:
    """Keep the drafts whose reference our Verifier accepts (verdicts recorded in ``progress`` are taken as they
    are; the others in one streaming batch); None when ``stop`` was raised before every verdict was in."""
    from tritonrl.common.result_log import stream_verdicts
    from tritonrl.verify import VerifyItem

    verdicts = [progress.get(task) for _, task in batch]
    todo = [i for i, verdict in enumerate(verdicts) if verdict is None]
    if todo:
        from tritonrl.verify import Verifier

        items = [VerifyItem(batch[i][1], code=batch[i][1].solution) for i in todo]
        owned = Verifier(verify_config) if verifier is None else None
        try:
            for j, result in stream_verdicts(verifier or owned, items, stop):
                verdicts[todo[j]] = progress.add(batch[todo[j]][1], result)
        finally:
            if owned is not None:
                owned.close()  # after a stop too: ends the references still running
        if any(verdict is None for verdict in verdicts):
            return None
    kept = []
    for (draft, task), verdict in zip(batch, verdicts, strict=True):
        if verdict["correct"]:
            report.verified += 1
            kept.append((draft, task))
        else:
            report.verify_failed += 1
            report.failures.append({"name": task.name, "stage": verdict["stage"], "error": verdict["error"]})
    return kept


def default_verify_config():
    """Correctness only (no timing): what a reference must pass to be kept."""
    from tritonrl.config import VerifyConfig

    return VerifyConfig(timing=False)


def _write_task(out: Path, task: KernelTask) -> None:
    for sub, text in ((f"level{task.level}", task.source), ("solutions", task.solution)):
        (out / sub).mkdir(parents=True, exist_ok=True)
        (out / sub / f"{task.name}.py").write_text(text)


def _write(out: str | Path, kept: list[tuple[Draft, KernelTask]], report: GenerationReport) -> None:
    out = Path(out)
    for sub in ("level1", "level2", "solutions"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    rows = []
    for draft, task in sorted(kept, key=lambda pair: pair[1].name):
        _write_task(out, task)
        rows.append({"name": task.name, "level": task.level, "family": draft.family, "signature": draft.signature,
                     "split": report.split})
        report.families[draft.family] = report.families.get(draft.family, 0) + 1
    report.kept = len(rows)
    report.signatures = len({r["signature"] for r in rows})
    report.families = dict(sorted(report.families.items()))
    (out / "tasks.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    (out / "generation_report.json").write_text(json.dumps(asdict(report), indent=1, sort_keys=True) + "\n")
    from tritonrl.tasks.sources import _bundled

    _bundled.cache_clear()  # a dir regenerated in this process must not be served from the loader's cache
