"""The run manifest: ``<run_dir>/manifest.json`` names each stage's status and outputs.

    {"stages": {"sft": {"status": "done", "outputs": {"model": ".../sft/final", "tokenizer": ...,
                        "config": ..., "metrics": ...}, "started": "...", "finished": "..."}}}

A stage reads its input with ``RunManifest(run_dir).output("sft", "model")``: the path the previous stage
wrote, so training can never evaluate or continue from a different checkpoint than the one produced.
Writes are atomic (temp file + ``os.replace``), so a pre-empted write leaves the previous manifest intact.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tritonrl.errors import ConfigError
from tritonrl.util.atomic import write_atomic

STATUSES = ("running", "done", "failed", "interrupted")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see either the old or the new file, never half of one (durably)."""
    write_atomic(path, text, durable=True)


def _absolute(value: str | os.PathLike) -> str:
    """Local paths are stored absolute, so a reader in another working directory finds the same file;
    values that are no local path (a hub id such as ``Qwen/Qwen2.5-Coder-7B-Instruct``) are kept as given."""
    path = Path(value)
    return str(path.resolve()) if isinstance(value, os.PathLike) or path.exists() else str(value)


class RunManifest:
    """Read-modify-write access to one run directory's manifest."""

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "manifest.json"

    def load(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"stages": {}}
        return json.loads(self.path.read_text())

    def _save(self, data: dict[str, Any]) -> None:
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def stage(self, name: str) -> dict[str, Any] | None:
        return self.load()["stages"].get(name)

    def start(self, name: str, config: dict[str, Any] | None = None) -> None:
        """Mark ``name`` running; keeps outputs and the start time of an earlier attempt (a resume)."""
        data = self.load()
        entry = data["stages"].setdefault(name, {"outputs": {}, "started": _now()})
        entry.update(status="running", finished=None, attempts=entry.get("attempts", 0) + 1)
        if config is not None:
            entry["config"] = config
        self._save(data)

    def record(self, name: str, **outputs: str | None) -> None:
        """Add output paths (``model=...``, ``tokenizer=...``) to a stage without changing its status."""
        data = self.load()
        entry = data["stages"].setdefault(name, {"outputs": {}, "status": "running", "started": _now()})
        entry["outputs"].update({k: _absolute(v) for k, v in outputs.items() if v is not None})
        self._save(data)

    def finish(self, name: str, status: str = "done", **extra: Any) -> None:
        if status not in STATUSES:
            raise ValueError(f"unknown stage status {status!r}")
        data = self.load()
        entry = data["stages"].setdefault(name, {"outputs": {}, "started": _now()})
        entry.update(status=status, finished=_now(), **extra)
        self._save(data)

    def output(self, stage: str, key: str) -> str:
        """The path ``stage`` recorded under ``key``; a ConfigError if the stage is missing or unfinished."""
        entry = self.stage(stage)
        if entry is None:
            raise ConfigError(f"run {self.run_dir} has no stage {stage!r} in {self.path}")
        if entry.get("status") != "done":
            raise ConfigError(f"stage {stage!r} in {self.path} is {entry.get('status')}, not done")
        if key not in entry.get("outputs", {}):
            raise ConfigError(f"stage {stage!r} in {self.path} recorded no {key!r} output")
        value = entry["outputs"][key]
        if os.path.isabs(value) and not os.path.exists(value):
            # Loud, not a guess elsewhere: the earlier attempt at this system read a path nobody wrote.
            raise ConfigError(f"stage {stage!r} in {self.path} recorded {key}={value}, which no longer exists")
        return value
