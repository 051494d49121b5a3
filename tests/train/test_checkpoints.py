from pathlib import Path
from types import SimpleNamespace

import pytest

from tritonrl.train.checkpoints import (
    MARKER,
    CheckpointCallback,
    latest_complete_checkpoint,
    load_extra_state,
    rotate_checkpoints,
)
from tritonrl.train.curriculum import Curriculum


def test_latest_complete_skips_unmarked_and_foreign_dirs(tmp_path):
    for step, marked in [(2, True), (10, True), (12, False)]:
        d = tmp_path / f"checkpoint-{step}"
        d.mkdir()
        if marked:
            (d / MARKER).write_text("ok")
    (tmp_path / "checkpoint-x").mkdir()
    assert latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-10"
    assert latest_complete_checkpoint(tmp_path / "missing") is None


def test_callback_writes_state_then_marker_and_state_restores(tmp_path):
    (tmp_path / "checkpoint-3").mkdir()
    cur = Curriculum()
    cur.update([1, 1, 1], [True, True, False])
    pushed = []
    cb = CheckpointCallback({"curriculum": cur}, after_save=pushed.append)
    cb.on_save(SimpleNamespace(output_dir=str(tmp_path)), SimpleNamespace(global_step=3, is_world_process_zero=True),
               control=None)
    assert latest_complete_checkpoint(tmp_path) == tmp_path / "checkpoint-3"
    assert pushed == [tmp_path / "checkpoint-3"]
    fresh = Curriculum()
    load_extra_state(tmp_path / "checkpoint-3", {"curriculum": fresh})
    assert fresh.state_dict() == cur.state_dict() and fresh.updates == 1


def _checkpoint(root, step, marked=True):
    path = root / f"checkpoint-{step}"
    path.mkdir()
    (path / "model.safetensors").write_text("w")
    if marked:
        (path / MARKER).write_text("ok")
    return path


def test_rotation_keeps_the_newest_complete_checkpoints_and_drops_stale_halves(tmp_path):
    for step, marked in [(1, True), (2, False), (3, True), (5, False)]:
        _checkpoint(tmp_path, step, marked)
    newest = _checkpoint(tmp_path, 4)  # just marked; checkpoint-5 is newer and unmarked (a resume's leftover)
    assert rotate_checkpoints(tmp_path, 2, newest) == [tmp_path / "checkpoint-1", tmp_path / "checkpoint-2"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-3", "checkpoint-4", "checkpoint-5"]
    assert rotate_checkpoints(tmp_path, None, newest) == []  # null: keep every checkpoint
    assert rotate_checkpoints(tmp_path, 1, newest) == [tmp_path / "checkpoint-3"]
    assert latest_complete_checkpoint(tmp_path) == newest


class Killed(BaseException):
    """A kill (SIGKILL, power loss) at one point of a save: nothing after it runs, nothing catches it."""


def test_a_kill_before_the_new_marker_still_leaves_a_complete_checkpoint(make_config, monkeypatch):
    """``run.save_total_limit: 1``: the old checkpoint may go only once the new one is marked. The Trainer's own
    rotation deleted it inside the save, before the marker, so a kill there left nothing to resume from."""
    from tritonrl.train import checkpoints
    from tritonrl.train.sft import run_sft

    real_write = checkpoints.atomic_write_text

    def killed_at_second_marker(path, text):
        if path.name == MARKER and path.parent.name == "checkpoint-2":
            raise Killed
        real_write(path, text)

    monkeypatch.setattr(checkpoints, "atomic_write_text", killed_at_second_marker)
    config = make_config("sft.max_steps=2", "run.save_total_limit=1")
    root = Path(config.run.run_dir) / "sft" / "checkpoints"
    with pytest.raises(Killed):
        run_sft(config)
    assert latest_complete_checkpoint(root) == root / "checkpoint-1"

    monkeypatch.setattr(checkpoints, "atomic_write_text", real_write)
    resumed = run_sft(make_config("sft.max_steps=2", "run.save_total_limit=1", "run.resume=true"))
    assert resumed.status == "done" and resumed.global_step == 2
    assert [p.name for p in root.glob("checkpoint-*")] == ["checkpoint-2"]  # the limit holds once the new one is whole
