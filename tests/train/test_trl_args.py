"""What our config becomes in TRL's GRPOConfig / RLOOConfig (built for real, no training)."""

import dataclasses
import warnings

import pytest

from tritonrl.config import load_config

pytest.importorskip("trl")


def build(tmp_path, *overrides):
    from tritonrl.train import grpo, rloo
    from tritonrl.train.stage_session import StageSession

    config = load_config(None, [f"run.run_dir={tmp_path}", "rl.use_cpu=true", "sft.use_cpu=true",
                                "rl.num_generations=2", "rl.per_device_batch_size=2", *overrides])
    module = grpo if config.rl.algo == "grpo" else rloo
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args = module.trainer_args(config, StageSession(config, config.rl.algo), curriculum_on=True)
    return args, [str(w.message) for w in caught]


@pytest.mark.parametrize("algo", ["grpo", "rloo"])
@pytest.mark.parametrize("on", [False, True])
def test_gradient_checkpointing_false_means_off(tmp_path, algo, on):
    """TRL's configs default gradient checkpointing to on; ours must win either way, without a warning."""
    args, caught = build(tmp_path, f"rl.algo={algo}", f"model.gradient_checkpointing={str(on).lower()}")
    assert args.gradient_checkpointing is on
    assert getattr(args, "activation_checkpointing", on) is on  # transformers 5's name for it
    assert not [m for m in caught if "checkpointing" in m]


def test_sft_gradient_checkpointing_false_means_off():
    from trl import SFTConfig

    from tritonrl.train.stage_session import gradient_checkpointing, trl_args

    config = load_config(None, ["model.gradient_checkpointing=false"])
    args = trl_args(SFTConfig, output_dir="unused", use_cpu=True, **gradient_checkpointing(config))
    assert args.gradient_checkpointing is False


def test_grpo_options_reach_grpo_config(tmp_path):
    args, caught = build(tmp_path, "rl.scale_rewards=none", "rl.loss_type=dr_grpo", "rl.epsilon_high=0.28",
                         "rl.num_iterations=2", "rl.top_p=0.9", "rl.mask_truncated_completions=true",
                         "rl.vllm_gpu_memory_utilization=0.5", "rl.vllm_max_model_length=4096",
                         "rl.vllm_enable_sleep_mode=true")
    assert (args.scale_rewards, args.loss_type, args.epsilon_high, args.num_iterations, args.top_p) == (
        "none", "dr_grpo", 0.28, 2, 0.9)
    assert args.mask_truncated_completions is True
    assert (args.vllm_gpu_memory_utilization, args.vllm_max_model_length, args.vllm_enable_sleep_mode) == (
        0.5, 4096, True)
    assert not [m for m in caught if "ignored" in m]  # nothing dropped: max_prompt_length is no longer passed


def test_defaults_do_not_scale_by_group_std(tmp_path):
    args, _ = build(tmp_path)
    assert args.scale_rewards == "batch" and args.loss_type == "dapo"
    assert args.learning_rate == pytest.approx(2e-5)


def test_rl_trl_pass_through_applies_last(tmp_path):
    args, _ = build(tmp_path, "rl.trl={importance_sampling_level: sequence, top_p: 0.5}")
    assert args.importance_sampling_level == "sequence"
    assert args.top_p == 0.5  # rl.trl overrides our own field


@pytest.mark.parametrize(("scale", "normalize"), [("batch", True), ("none", False)])
def test_rloo_maps_scale_rewards_to_normalize_advantages(tmp_path, scale, normalize):
    args, caught = build(tmp_path, "rl.algo=rloo", f"rl.scale_rewards={scale}")
    assert args.normalize_advantages is normalize
    assert not [m for m in caught if "ignored" in m]
    assert "loss_type" not in {f.name for f in dataclasses.fields(args)}
