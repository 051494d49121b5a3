"""``completions.jsonl``: every completion an evaluation sampled, appended after each generate call, reused on resume.

    log = SampleLog(out / COMPLETIONS_JSONL, resume)       # resume: keep what an earlier run sampled
    texts = log.sample(lambda: generator, prompts, keys, per_call, stop)   # None: stopped before all were sampled

A row: ``task``, ``task_path``, ``sample``, ``turn`` (``tritonrl.common.result_log.row_key``), ``prompt`` (a digest of the
chat messages) and ``completion``. Prompts go to the generator ``per_call`` at a time, at fixed positions of the
prompt list, and a call's rows are appended together once it returns. A rerun skips every call whose rows are all
there for the same prompts and makes the others again whole, so a seeded generator (``HFGenerator`` seeds each
call) gives exactly the completions an uninterrupted run gives. Used by ``tritonrl.evaluation.evaluate`` and
``tritonrl.evaluation.refinement``; a raised stop request (``tritonrl.common.signals``) is obeyed between calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from tritonrl.common.result_log import row_key

COMPLETIONS_JSONL = "completions.jsonl"


def prompt_digest(messages: Any) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:16]


class SampleLog:
    """The completions sampled so far, by row key, each with the digest of the prompt it answered."""

    def __init__(self, path: str | Path, resume: bool):
        self.path = Path(path)
        self.rows: dict[tuple, tuple[str, str]] = {}
        if not resume:
            self.path.unlink(missing_ok=True)
        elif self.path.is_file():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a kill: its call is made again
                    continue
                if isinstance(row, dict) and isinstance(row.get("completion"), str) and "task" in row:
                    self.rows[row_key(row)] = (row.get("prompt"), row["completion"])

    def _has(self, key: tuple, digest: str) -> bool:
        return key in self.rows and self.rows[key][0] == digest

    def sample(self, generator: Callable[[], Any], prompts: Sequence[Any], keys: Sequence[Sequence[tuple]],
               per_call: int, stop: Any = None, wanted: Collection[tuple] | None = None) -> dict[tuple, str] | None:
        """The completion for each key of ``keys[i]`` (``len(keys[i])`` per prompt) that is in ``wanted`` (default:
        all), from this log or from ``generator()`` (called once, when first needed); None when ``stop`` was
        raised before the last call that was needed."""
        digests = [prompt_digest(m) for m in prompts]
        made = None
        for start in range(0, len(prompts), max(1, per_call)):
            chunk = range(start, min(start + max(1, per_call), len(prompts)))
            if all(self._has(key, digests[i]) or (wanted is not None and key not in wanted)
                   for i in chunk for key in keys[i]):
                continue
            if stop is not None and stop.is_set():
                return None
            made = made or generator()
            outputs = made.generate([prompts[i] for i in chunk], len(keys[start]))
            lines = []
            for i, texts in zip(chunk, outputs, strict=True):
                for key, text in zip(keys[i], texts, strict=True):
                    self.rows[key] = (digests[i], text)
                    lines.append(json.dumps({"task": key[0], "task_path": key[1], "sample": key[2], "turn": key[3],
                                             "prompt": digests[i], "completion": text}) + "\n")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write("".join(lines))
        return {key: self.rows[key][1] for ks in keys for key in ks if wanted is None or key in wanted}

    def sampled(self, prompts: Sequence[Any], keys: Sequence[Sequence[tuple]]) -> int:
        """How many of ``prompts`` have all their completions here."""
        return sum(all(self._has(key, prompt_digest(m)) for key in ks) for m, ks in zip(prompts, keys))
