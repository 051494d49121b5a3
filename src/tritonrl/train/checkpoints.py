"""Checkpoints that are safe to resume from: a ``COMPLETE`` marker written after everything else.

transformers writes ``checkpoint-N/`` piece by piece (weights, optimizer, RNG, trainer state); a run killed
half-way leaves a directory that looks like a checkpoint but cannot be resumed. ``CheckpointCallback`` runs
after each save (``on_save``): it writes the extra state we own (the curriculum's ``state_dict``) and then the
``COMPLETE`` marker, and asks the mirror to sync. ``latest_complete_checkpoint`` picks the newest marked one.
Several processes: every rank writes its own part of a checkpoint (RNG state; ZeRO optimizer shards), so the
callback first waits for all of them (a barrier on every rank), then the main process alone writes the marker.

Old checkpoints (``run.save_total_limit``) are deleted here, after the marker, not by the Trainer: transformers
rotates inside its save, before ``on_save``, so with a limit of 1 a kill between its deletion and our marker left
no complete checkpoint at all. Marker first, deletion after: at every instant one complete checkpoint exists.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from transformers import TrainerCallback

from tritonrl.common.manifest import atomic_write_text

MARKER = "COMPLETE"
EXTRA_STATE = "tritonrl_state.json"
_CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


class Stateful(Protocol):
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def checkpoint_step(path: Path) -> int | None:
    match = _CHECKPOINT_RE.match(path.name)
    return int(match.group(1)) if match else None


def latest_complete_checkpoint(output_dir: str | Path) -> Path | None:
    """The highest-step ``checkpoint-N`` under ``output_dir`` that has the ``COMPLETE`` marker."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    marked = [p for p in root.iterdir() if checkpoint_step(p) is not None and (p / MARKER).exists()]
    return max(marked, key=checkpoint_step, default=None)


def load_extra_state(checkpoint: Path, stateful: dict[str, Stateful]) -> None:
    """Restore our objects (curriculum, ...) from a checkpoint written by ``CheckpointCallback``."""
    path = checkpoint / EXTRA_STATE
    if not path.exists():
        return
    saved = json.loads(path.read_text())
    for name, obj in stateful.items():
        if name in saved:
            obj.load_state_dict(saved[name])


def rotate_checkpoints(output_dir: str | Path, keep: int | None, newest: Path) -> list[Path]:
    """Delete the checkpoints older than the newest ``keep`` complete ones, and the unmarked ones older than
    ``newest`` (a kill mid-save left them; they can never be resumed); the deleted paths, oldest first.

    Called only once ``newest`` is marked, so it is never the last complete checkpoint that goes. A deleted
    checkpoint loses its marker first: a kill half-way through ``rmtree`` leaves a directory resume skips.
    """
    if keep is None:
        return []
    root, limit = Path(output_dir), checkpoint_step(newest)
    found = sorted((p for p in root.iterdir() if checkpoint_step(p) is not None), key=checkpoint_step)
    complete = [p for p in found if (p / MARKER).exists()]
    kept = set(complete[-keep:]) | {newest}
    doomed = [p for p in found if p not in kept and checkpoint_step(p) < limit]
    for path in doomed:
        (path / MARKER).unlink(missing_ok=True)
        shutil.rmtree(path)
    return doomed


class CheckpointCallback(TrainerCallback):
    """After every save: write extra state, then the ``COMPLETE`` marker, then delete checkpoints beyond
    ``keep`` (``run.save_total_limit``; the Trainer's own rotation must be off), then call ``after_save``."""

    def __init__(self, stateful: dict[str, Stateful] | None = None,
                 after_save: Callable[[Path], None] | None = None, keep: int | None = None):
        self.stateful = stateful or {}
        self.after_save = after_save
        self.keep = keep

    def on_save(self, args, state, control, **kwargs):
        from tritonrl.common.ranks import barrier

        barrier()  # every rank's part of the checkpoint is on disk before it is marked whole
        if not state.is_world_process_zero:
            return control
        checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if not checkpoint.is_dir():
            return control
        extra = {name: obj.state_dict() for name, obj in self.stateful.items()}
        atomic_write_text(checkpoint / EXTRA_STATE, json.dumps(extra))
        atomic_write_text(checkpoint / MARKER, f"step {state.global_step}\n")
        rotate_checkpoints(args.output_dir, self.keep, checkpoint)
        if self.after_save:
            self.after_save(checkpoint)
        return control
