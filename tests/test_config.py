from pathlib import Path

import pytest

from tritonrl.config import PipelineConfig, TrainingConfig, load_config
from tritonrl.errors import ConfigError

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def test_configs_exist():
    assert {p.name for p in CONFIGS} >= {"smoke.yaml", "grpo_7b.yaml"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    config = load_config(str(path), schema=PipelineConfig)  # the broadest schema: training + eval + pipeline
    assert isinstance(config, TrainingConfig)
    assert config.rl.algo in ("grpo", "rloo", "best-of-n")


def test_precedence_defaults_then_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  steps: 7\n  learning_rate: 1\nlora:\n  enabled: false\n")
    config = load_config(str(path), ["rl.steps=9", "data.levels=[2]", "run.mirror_url=memory://m"])
    assert config.rl.steps == 9
    assert config.rl.learning_rate == 1.0 and isinstance(config.rl.learning_rate, float)
    assert config.lora.enabled is False and config.lora.r == 16
    assert config.data.levels == [2] and config.run.mirror_url == "memory://m"
    assert config.verify.num_trials == 5  # untouched sections keep their defaults


@pytest.mark.parametrize("yaml_text, overrides, message", [
    ("rl:\n  stepz: 3\n", [], "unknown config key rl.stepz"),
    ("", ["nope.x=1"], "unknown config key nope"),
    ("", ["rl.steps=many"], "rl.steps"),
    ("", ["lora.enabled=3"], "lora.enabled"),
    ("", ["rl.steps"], "key.sub=value"),
    ("rl: 3\n", [], "must be a mapping"),
    ("rl: [\n", [], "not valid YAML"),
])
def test_mistakes_are_one_line_config_errors(tmp_path, yaml_text, overrides, message):
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(str(path), overrides)
    assert "\n" not in str(info.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="not found"):
        load_config("/nonexistent/x.yaml")
