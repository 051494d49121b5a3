"""Manifest paths cannot depend on the working directory, and a vanished output is a loud error."""

import os

import pytest

from tritonrl.common.manifest import RunManifest
from tritonrl.errors import ConfigError


def test_relative_paths_are_recorded_absolute_and_read_back_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sft" / "final").mkdir(parents=True)
    manifest = RunManifest(tmp_path / "run")
    manifest.start("sft")
    manifest.record("sft", model="sft/final", base="Qwen/Qwen2.5-Coder-7B-Instruct")
    manifest.finish("sft")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    model = manifest.output("sft", "model")
    assert os.path.isabs(model) and os.path.isdir(model)
    assert manifest.output("sft", "base") == "Qwen/Qwen2.5-Coder-7B-Instruct"


def test_output_that_vanished_is_an_error_not_a_guess(tmp_path):
    out = tmp_path / "sft" / "final"
    out.mkdir(parents=True)
    manifest = RunManifest(tmp_path / "run")
    manifest.start("sft")
    manifest.record("sft", model=out)
    manifest.finish("sft")
    out.rmdir()
    with pytest.raises(ConfigError, match="no longer exists"):
        manifest.output("sft", "model")
