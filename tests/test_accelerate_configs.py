"""Every accelerate config in configs/accelerate/ parses into accelerate's own config class, and every nested
key is an option ``accelerate launch`` knows (a misspelt key would otherwise be ignored silently)."""

from pathlib import Path

import pytest

accelerate = pytest.importorskip("accelerate")

from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
from accelerate.commands.launch import launch_command_parser
from accelerate.utils import DistributedType

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "accelerate"
EXPECTED = {
    "ddp.yaml": DistributedType.MULTI_GPU,
    "zero2.yaml": DistributedType.DEEPSPEED,
    "zero3.yaml": DistributedType.DEEPSPEED,
    "fsdp.yaml": DistributedType.FSDP,
}


def _launch_options() -> set[str]:
    return {action.dest for action in launch_command_parser()._actions}


def test_every_shipped_config_is_expected():
    assert sorted(p.name for p in CONFIG_DIR.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_parses_into_accelerate_class(name):
    config = load_config_from_file(str(CONFIG_DIR / name))
    assert isinstance(config, ClusterConfig)
    assert config.distributed_type == EXPECTED[name]
    assert config.mixed_precision == "bf16"
    assert config.num_processes >= 1 and not config.use_cpu


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_nested_keys_are_launch_options(name):
    config = load_config_from_file(str(CONFIG_DIR / name))
    options = _launch_options()
    # accelerate copies deepspeed_config.x to --x and fsdp_config.x to --fsdp_x (accelerate/commands/launch.py)
    nested = dict(config.deepspeed_config or {})
    nested.update({k if k.startswith("fsdp") else f"fsdp_{k}": v for k, v in (config.fsdp_config or {}).items()})
    unknown = sorted(k for k in nested if k not in options)
    assert not unknown, f"{name}: keys accelerate launch does not know: {unknown}"


def test_zero_stages():
    assert load_config_from_file(str(CONFIG_DIR / "zero2.yaml")).deepspeed_config["zero_stage"] == 2
    assert load_config_from_file(str(CONFIG_DIR / "zero3.yaml")).deepspeed_config["zero_stage"] == 3


def test_fsdp_config_builds_accelerate_plugin():
    from accelerate.utils import FullyShardedDataParallelPlugin

    fsdp = load_config_from_file(str(CONFIG_DIR / "fsdp.yaml")).fsdp_config
    # the plugin's fields drop the fsdp_ prefix, except these two (accelerate/utils/dataclasses.py)
    renamed = {"fsdp_version": "fsdp_version", "fsdp_offload_params": "cpu_offload"}
    kwargs = {renamed.get(k, k.removeprefix("fsdp_")): v for k, v in fsdp.items()}
    plugin = FullyShardedDataParallelPlugin(**kwargs)
    assert plugin.fsdp_version == 2
    assert plugin.reshard_after_forward is True
