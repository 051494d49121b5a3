import json

import pytest

from tritonrl.common.manifest import RunManifest, atomic_write_text
from tritonrl.errors import ConfigError


def test_stage_lifecycle_and_output(tmp_path):
    m = RunManifest(tmp_path)
    m.start("sft")
    assert m.stage("sft")["status"] == "running"
    with pytest.raises(ConfigError, match="running"):
        m.output("sft", "model")
    (tmp_path / "sft" / "final").mkdir(parents=True)
    m.record("sft", model=tmp_path / "sft" / "final")
    m.finish("sft")
    assert m.output("sft", "model") == str((tmp_path / "sft" / "final").resolve())
    with pytest.raises(ConfigError, match="no stage"):
        m.output("grpo", "model")
    with pytest.raises(ConfigError, match="no 'metrics'"):
        m.output("sft", "metrics")


def test_restart_counts_attempts_and_keeps_outputs(tmp_path):
    m = RunManifest(tmp_path)
    m.start("grpo")
    m.record("grpo", init_model="a")
    m.finish("grpo", "interrupted", reason="SIGTERM")
    m.start("grpo")
    entry = m.stage("grpo")
    assert entry["attempts"] == 2 and entry["status"] == "running" and entry["outputs"]["init_model"] == "a"


def test_atomic_write_leaves_no_temp_files(tmp_path):
    path = tmp_path / "x.json"
    atomic_write_text(path, json.dumps({"a": 1}))
    atomic_write_text(path, json.dumps({"a": 2}))
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
