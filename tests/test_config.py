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


# ---------------------------------------------------------------- validation at load (issue 17)
SHIPPED_BAD_VALUES = [  # each used to load and fail much later, or never
    ("reward.preset=stagedd", "reward.preset", "correctness, staged"),
    ("rl.algo=ppo", "rl.algo", "grpo, rloo, best-of-n"),
    ("rl.vllm_mode=bogus", "rl.vllm_mode", "colocate, server"),
    ("verify.backend=rayy", "verify.backend", "local, ray"),
    ("verify.device=tpu", "verify.device", "auto, cpu, cuda"),
    ("eval.backend=x", "eval.backend", "hf, vllm, auto"),
    ("rl.steps=-5", "rl.steps", ">= 1"),
]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_validates_through_the_cli(path):
    from tritonrl.cli import main

    assert main(["config", "validate", str(path)]) == 0


@pytest.mark.parametrize(("override", "key", "fix"), SHIPPED_BAD_VALUES, ids=[v[0] for v in SHIPPED_BAD_VALUES])
def test_bad_values_fail_at_load_naming_key_and_fix(override, key, fix):
    with pytest.raises(ConfigError) as info:
        load_config(None, [override], schema=PipelineConfig)
    message = str(info.value)
    assert key in message and fix in message and "\n" not in message


@pytest.mark.parametrize("overrides, message", [
    (["rl.num_generations=1"], "rl.num_generations"),
    (["rl.algo=rloo", "rl.scale_rewards=group"], "rl.scale_rewards"),
    (["rl.use_vllm=true", "rl.use_cpu=true"], "rl.use_vllm"),
    (["rl.vllm_max_model_length=100", "rl.max_completion_length=200"], "rl.vllm_max_model_length"),
    (["rl.loss_type=luspo"], "importance_sampling_level"),
    (["rl.epsilon_high=0.1"], "rl.epsilon_high"),
    (["rl.top_p=0"], "rl.top_p"),
    (["curriculum.start_p=0.9", "curriculum.end_p=0.5"], "curriculum.start_p"),
    (["reward.tiny_credit=0.9"], "reward.compiled_credit"),
    (["reward.max_speedup=1"], "reward.max_speedup"),
    (["best_of_n.top_k=20"], "best_of_n.top_k"),
    (["rl.algo=best-of-n", "best_of_n.min_reward=2"], "best_of_n.min_reward"),
    (["sft.max_steps=0"], "sft.max_steps"),
    (["verify.extra_dtype=float64"], "verify.extra_dtype"),
    (["verify.atol={float32: tight}"], "verify.atol"),
    (["lora.dropout=1.5"], "lora.dropout"),
    (["data.levels=[]"], "data.levels"),
    (["pipeline.stages=[data, trian]"], "pipeline.stages"),
    (["eval.device=tpu"], "eval.device"),
    (["rl.max_prompt_length=512"], "rl.trl.max_prompt_length"),  # removed from TRL: a hint, not a silent drop
    (["rl.trl={save_total_limit: 1}"], "run.save_total_limit"),  # the Trainer's rotation runs before the marker
])
def test_cross_field_and_range_rules(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")) as info:
        load_config(None, overrides, schema=PipelineConfig)
    assert "\n" not in str(info.value)


def test_sections_validate_when_built_directly_too():
    from tritonrl.config import RLRunConfig, VerifyConfig

    with pytest.raises(ConfigError, match=r"unknown rl\.algo 'ppo'"):
        RLRunConfig(algo="ppo")
    assert VerifyConfig(timeout_s=5).timeout_s == 5.0 and isinstance(VerifyConfig(timeout_s=5).timeout_s, float)


def test_every_field_has_help_text():
    import dataclasses

    for section in dataclasses.fields(PipelineConfig):
        for f in dataclasses.fields(section.default_factory()):
            assert f.metadata.get("help"), f"{section.name}.{f.name} has no help text"


def test_rl_trl_pass_through_keys_are_checked_against_installed_trl():
    pytest.importorskip("trl")
    config = load_config(None, ["rl.trl={importance_sampling_level: sequence, epsilon: 0.25}"])
    assert config.rl.trl == {"importance_sampling_level": "sequence", "epsilon": 0.25}
    with pytest.raises(ConfigError, match=r"rl\.trl has key\(s\) not_an_option .*GRPOConfig"):
        load_config(None, ["rl.trl={not_an_option: 1}"])
    with pytest.raises(ConfigError, match=r"RLOOConfig"):  # scale_rewards is GRPO's; RLOO's config lacks it
        load_config(None, ["rl.algo=rloo", "rl.trl={scale_rewards: group}"])


def test_noise_safe_rl_defaults():
    rl = TrainingConfig().rl
    assert rl.scale_rewards in ("batch", "none")  # group-std scaling would amplify timing noise
    assert 1e-5 <= rl.learning_rate <= 5e-5  # LoRA scale (the default lora.enabled is true)
    seven_b = load_config(str(CONFIGS[0].parent / "grpo_7b.yaml"), schema=PipelineConfig)  # as the CLI loads it
    assert seven_b.lora.enabled and 1e-5 <= seven_b.rl.learning_rate <= 5e-5


# ---------------------------------------------------------------- duplicate keys (issue 27)
@pytest.mark.parametrize(("text", "where"), [
    ("rl:\n  steps: 1\nrl:\n  steps: 2\n", "c.yaml:3: duplicate key 'rl' (first at line 1)"),
    ("rl:\n  steps: 1\n  algo: grpo\n  steps: 2\n", "c.yaml:4: duplicate key 'steps' (first at line 2)"),
])
def test_duplicate_keys_are_errors_naming_file_and_lines(tmp_path, text, where):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value).startswith(f"{tmp_path}/{where}; YAML would keep only the last")


def test_merge_keys_override_without_being_duplicates():
    from tritonrl.util.yamlfile import read_yaml

    data, duplicates = read_yaml("base: &b\n  steps: 1\nrl:\n  <<: *b\n  steps: 2\n", "m.yaml")
    assert data["rl"] == {"steps": 2} and duplicates == []


def test_smoke_config_judges_with_its_own_verifier_settings():
    """Its verifier section once sat under a second ``pipeline:`` key, dropped by YAML: 5 trials, not its one."""
    config = load_config(str(CONFIGS[0].parent / "smoke.yaml"), schema=PipelineConfig)
    verify = config.verify
    assert (verify.device, verify.workers, verify.timeout_s, verify.multi_input, verify.timing) == ("cpu", 2, 60,
                                                                                                      False, False)
    assert config.pipeline.in_distribution is True


# ---------------------------------------------------------------- every problem at once (issue 41: pydantic)
def test_loading_reports_every_problem_at_once_on_one_line():
    with pytest.raises(ConfigError) as info:
        load_config(None, ["rl.algo=ppo", "rl.steps=-1", "nope.x=1", "lora.dropout=1"])
    message = str(info.value)
    assert message.startswith("4 config errors: (1) unknown rl.algo 'ppo'; choose one of grpo, rloo, best-of-n ")
    assert "(2) rl.steps = -1 is out of range; it must be >= 1 " in message
    assert "(3) unknown config key nope (known: " in message
    assert message.endswith("(4) lora.dropout = 1 is out of range; it must be >= 0 and < 1")
    assert "\n" not in message


@pytest.mark.parametrize(("data", "problems"), [
    ({"rl": 3, "verify": {"workers": -1, "stepz": 1}},
     ["config section rl must be a mapping", "verify.workers = -1 is out of range; it must be >= 0",
      "unknown config key verify.stepz (known: "]),
    ({"pipeline": {"stages": ["data", "trian", "x"]}},  # one problem per key, however many bad items
     ["unknown pipeline.stages ['data', 'trian', 'x']; choose one of data, sft, rl, eval, report"]),
    ({"verify": {"atol": {"float32": "tight"}, "gpus": [0]}, "rl": {"steps": True, "learning_rate": "fast"}},
     ["config key verify.atol = {'float32': 'tight'} does not match type dict[str, float]",
      "config key verify.gpus = [0] does not match type list[str] | None",
      "config key rl.steps = True does not match type int",
      "config key rl.learning_rate = 'fast' does not match type float"]),
    ({"rl": {"steps": 3.0}, "lora": {"target_modules": 3, "enabled": 1}},  # strict: no float for an int, no 1 for true
     ["config key rl.steps = 3.0 does not match type int",
      "config key lora.target_modules = 3 does not match type str | list[str]",
      "config key lora.enabled = 1 does not match type bool"]),
    ({"rl": None, "verify": {"timeout_s": "1e-3", "atol": {"float32": "1e-3"}}}, []),  # YAML 1.1's 1e-3 is a string
])
def test_config_errors_lists_each_problem(data, problems):
    from tritonrl.config import config_errors

    found = config_errors(PipelineConfig, data)
    assert len(found) == len(problems) and all(f.startswith(p) for f, p in zip(found, problems)), found


def test_rules_run_only_where_the_fields_are_valid_and_each_section_reports_its_own():
    from tritonrl.config import config_errors

    assert config_errors(PipelineConfig, {"rl": {"num_generations": 1, "steps": 0}}) == [
        "rl.steps = 0 is out of range; it must be >= 1"]  # the rule would follow from a valid section only
    found = config_errors(PipelineConfig, {"rl": {"num_generations": 1}, "curriculum": {"start_p": 0.9, "end_p": 0.5}})
    assert [p.split(" ")[0] for p in found] == ["rl.num_generations", "curriculum.start_p"]


def test_replace_and_direct_construction_validate_and_keep_float_fields_float():
    import dataclasses

    from tritonrl.config import RLRunConfig, VerifyConfig

    verify = VerifyConfig(timeout_s="5")
    assert verify.timeout_s == 5.0 and isinstance(verify.timeout_s, float)
    assert dataclasses.replace(verify, workers=3).workers == 3
    with pytest.raises(ConfigError, match=r"^verify\.workers = -2 is out of range; it must be >= 0$"):
        dataclasses.replace(verify, workers=-2)
    with pytest.raises(ConfigError, match=r"^unknown rl\.algo 'ppo'"):
        RLRunConfig("ppo")
    with pytest.raises(ConfigError, match=r"^config section rl must be a mapping$"):
        TrainingConfig(rl=3)
