"""``sft.lr_scheduler``: linear (warm-up, then decay; transformers' default) or constant (a study continuing SFT at
the rate it had reached). Best-of-N's sampling is tests/train/test_best_of_n_sampling.py."""

import pytest

from tritonrl.config import load_config
from tritonrl.errors import ConfigError


def args_for(make_config, *overrides):
    from tritonrl.train.sft import STAGE, sft_trainer_args
    from tritonrl.train.stage_session import StageSession

    config = make_config(*overrides)
    return sft_trainer_args(config, StageSession(config, STAGE))


def test_sft_schedules_linearly_by_default_and_constantly_when_asked(make_config):
    assert str(getattr(args_for(make_config).lr_scheduler_type, "value", "")) == "linear"
    args = args_for(make_config, "sft.lr_scheduler=constant", "sft.warmup_ratio=0", "sft.learning_rate=4e-4")
    assert args.lr_scheduler_type.value == "constant" and args.learning_rate == pytest.approx(4e-4)


def test_a_constant_schedule_with_warm_up_is_refused_at_load():
    with pytest.raises(ConfigError, match="warmup_ratio"):
        load_config(None, ["sft.lr_scheduler=constant", "sft.warmup_ratio=0.05"])
    with pytest.raises(ConfigError, match="lr_scheduler"):
        load_config(None, ["sft.lr_scheduler=cosine"])


def test_ddp_skips_the_unused_parameter_search_for_lora_only(make_config):
    """Under DDP a LoRA run's adapters all take part in every forward; a full fine-tune keeps transformers' rule."""
    assert args_for(make_config).ddp_find_unused_parameters is False
    assert args_for(make_config, "lora.enabled=false").ddp_find_unused_parameters is None
