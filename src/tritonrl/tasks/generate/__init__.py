"""Procedural KernelBench-format tasks with verified Triton references, split by op combination.

    tritonrl tasks generate --n 64 --seed 0 --split train --out data/gen/train [--kernelbench DIR] [--shape-scale 8]
    from tritonrl.tasks.generate import generate_tasks
    report = generate_tasks(64, seed=0, split="heldout", out="data/gen/heldout")

Families (``tritonrl.tasks.generate.families``): elementwise chains, row reductions with prologue/epilogue, GEMM
plus epilogue. Each draft's *signature* is its family and ordered op names (constants and shapes left out); a
signature is held out when a hash of it falls in the first ``heldout_share`` of the hash range, for every seed, so
held-out tasks combine ops in ways no training task does. Drafts are dropped when of the other split, a duplicate
(normalized AST of the task), a KernelBench match (``tritonrl.tasks.kernelbook``'s index), or when our Verifier
rejects the reference; every drop is counted in ``generation_report.json``.

Layout written (what ``tritonrl.tasks.load_tasks`` reads, references included): ``OUT/level{1,2}/NAME.py``,
``OUT/solutions/NAME.py``, ``OUT/tasks.jsonl`` (name, family, signature, split) and ``OUT/generation_report.json``.
The same arguments give the same bytes (nothing time-dependent is written).
"""

from __future__ import annotations

import ast
import hashlib
import json
import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tritonrl.astlock import parse_source
from tritonrl.errors import UserError
from tritonrl.tasks.generate.families import Draft, draw
from tritonrl.tasks.model import KernelTask

__all__ = ["SPLITS", "GenerationReport", "generate_tasks", "split_of"]

SPLITS = ("train", "heldout")
HELDOUT_SHARE = 0.25
MAX_DRAWS_PER_TASK = 40


@dataclass
class GenerationReport:
    """What generation drew and why each dropped draft went."""

    n: int
    seed: int
    split: str
    shape_scale: int
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

    def table(self) -> str:
        from tritonrl.tasks.kernelbook import overlap_cell

        rows = [("drawn", self.drawn), ("other split", self.other_split), ("duplicate", self.duplicate),
                ("KernelBench overlap", overlap_cell(self.contaminated, self.kernelbench)),
                ("reference verified", self.verified),
                ("reference failed", self.verify_failed), ("kept", self.kept)]
        return "\n".join(f"{label:<20} {count:>7}" for label, count in rows)


def split_of(signature: str, heldout_share: float = HELDOUT_SHARE) -> str:
    """``heldout`` for a fixed share of op-combination signatures, decided by a hash (not by the seed)."""
    bucket = int(hashlib.sha256(f"tritonrl-split:{signature}".encode()).hexdigest()[:8], 16) / 0x100000000
    return "heldout" if bucket < heldout_share else "train"


def task_name(draft: Draft) -> str:
    digest = hashlib.sha256(draft.source.encode()).hexdigest()[:8]
    return f"gen_{draft.family}_{'_'.join(draft.ops[:5])}_{digest}"


def generate_tasks(n: int, seed: int, split: str, out: str | Path, kernelbench_dir: str | Path | None = None,
                   shape_scale: int = 1, heldout_share: float = HELDOUT_SHARE, verify_config=None,
                   verifier=None) -> GenerationReport:
    """Write ``n`` verified tasks of ``split`` to ``out`` (replacing what a previous run wrote there)."""
    if split not in SPLITS:
        raise UserError(f"unknown split {split!r}; choose {' or '.join(SPLITS)}")
    if n < 1:
        raise UserError("--n must be at least 1")
    report = GenerationReport(n=n, seed=seed, split=split, shape_scale=shape_scale,
                              kernelbench=str(kernelbench_dir) if kernelbench_dir is not None else None)
    rng = random.Random(f"tritonrl-generate:{seed}")
    index = _kernelbench_index(kernelbench_dir)
    seen: set[str] = set()
    kept: list[tuple[Draft, KernelTask]] = []
    while len(kept) < n and report.drawn < n * MAX_DRAWS_PER_TASK:
        batch = _draw_batch(rng, n - len(kept), split, heldout_share, shape_scale, seen, index, report)
        kept += _verified(batch, report, verify_config, verifier)
    if len(kept) < n:
        raise UserError(f"only {len(kept)} of {n} {split} tasks after {report.drawn} draws "
                        f"({report.verify_failed} references failed verification)")
    _write(out, kept, report)
    return report


def _draw_batch(rng, want, split, heldout_share, shape_scale, seen, index, report) -> list[tuple[Draft, KernelTask]]:
    batch = []
    while len(batch) < want and report.drawn < report.n * MAX_DRAWS_PER_TASK:
        draft = draw(rng, shape_scale)
        report.drawn += 1
        if split_of(draft.signature, heldout_share) != split:
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


def _verified(batch, report: GenerationReport, verify_config, verifier) -> list[tuple[Draft, KernelTask]]:
    """Keep the drafts whose reference our Verifier accepts (one ``verify_many`` for the batch)."""
    if not batch:
        return []
    from tritonrl.verify import Verifier, VerifyItem

    items = [VerifyItem(task, code=task.solution) for _, task in batch]
    if verifier is not None:
        results = verifier.verify_many(items)
    else:
        with Verifier(verify_config or default_verify_config()) as owned:
            results = owned.verify_many(items)
    kept = []
    for (draft, task), result in zip(batch, results, strict=True):
        if result.correct:
            report.verified += 1
            kept.append((draft, task))
        else:
            report.verify_failed += 1
            report.failures.append({"name": task.name, "stage": str(result.stage), "error": (result.error or "")[:300]})
    return kept


def default_verify_config():
    """Correctness only (no timing): what a reference must pass to be kept."""
    from tritonrl.config import VerifyConfig

    return VerifyConfig(timing=False)


def _write(out: str | Path, kept: list[tuple[Draft, KernelTask]], report: GenerationReport) -> None:
    out = Path(out)
    for sub in ("level1", "level2", "solutions"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    rows = []
    for draft, task in sorted(kept, key=lambda pair: pair[1].name):
        level_dir = out / f"level{task.level}"
        level_dir.mkdir(exist_ok=True)
        (level_dir / f"{task.name}.py").write_text(task.source)
        (out / "solutions" / f"{task.name}.py").write_text(task.solution)
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
