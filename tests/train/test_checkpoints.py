from types import SimpleNamespace

from tritonrl.curriculum import Curriculum
from tritonrl.train.checkpoints import (
    MARKER,
    CheckpointCallback,
    latest_complete_checkpoint,
    load_extra_state,
)


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
