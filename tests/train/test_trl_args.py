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


# ------------------------------------------------------------------------------------ rl.use_vllm (issue 52)
# What each field we pass means in TRL's own help text: colocate-only, server-only, or both modes.
VLLM_FIELDS = {"use_vllm": None, "vllm_mode": None, "vllm_enable_sleep_mode": None,
               "vllm_gpu_memory_utilization": "colocate", "vllm_max_model_length": "colocate",
               "vllm_server_base_url": "server"}


@pytest.mark.parametrize("algo", ["grpo", "rloo"])
@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_use_vllm_builds_the_arguments_trl_documents(tmp_path, algo, mode):
    """``rl.use_vllm`` in each mode: every vLLM argument we pass is a field of the installed TRL's config class,
    documented (its help) for the mode it is used in, and reaches the built config unchanged. Built for real, on
    a CPU (TRL checks vLLM itself only when the trainer starts); no vLLM generation ran (none can run here)."""
    from trl import GRPOConfig, RLOOConfig

    cls = GRPOConfig if algo == "grpo" else RLOOConfig
    url = "http://gen-node:8000"
    args, caught = build(tmp_path, f"rl.algo={algo}", "rl.use_cpu=false", "rl.use_vllm=true",
                         f"rl.vllm_mode={mode}", f"rl.vllm_server_base_url={url}",
                         "rl.vllm_gpu_memory_utilization=0.4", "rl.vllm_max_model_length=6144",
                         "rl.vllm_enable_sleep_mode=true")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    sections = doc_sections(cls)
    for name, only_in in VLLM_FIELDS.items():
        assert name in fields, f"TRL's {cls.__name__} has no field {name}"
        if only_in is not None:
            where = sections.get(name, "") + " " + fields[name].metadata.get("help", "")
            assert f"only used when `vllm_mode` is `\"{only_in}\"`" in where or f"is set to `'{only_in}'`" in where, \
                f"{name}: TRL no longer documents it for {only_in} mode ({where!r})"
    assert args.use_vllm is True and args.vllm_mode == mode
    assert (args.vllm_server_base_url, args.vllm_gpu_memory_utilization, args.vllm_max_model_length,
            args.vllm_enable_sleep_mode) == (url, 0.4, 6144, True)
    assert "colocate" in fields["vllm_mode"].metadata["help"] and "server" in fields["vllm_mode"].metadata["help"]
    assert not [m for m in caught if "vllm" in m.lower() and "ignored" in m]


def doc_sections(cls) -> dict[str, str]:
    """field -> the heading of the section of ``cls``'s docstring that documents it ("> Parameters that ...")."""
    import re

    heading, out = "", {}
    for line in (cls.__doc__ or "").splitlines():
        if line.strip().startswith("> "):
            heading = line.strip()
        elif match := re.match(r"\s{8}(\w+) \(`", line):
            out[match.group(1)] = heading
    return out


def test_use_vllm_without_vllm_installed_is_one_clear_error(tmp_path):
    import importlib.util

    from tritonrl.errors import ConfigError
    from tritonrl.train.rl import check_rl_config

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    config = load_config(None, ["rl.use_vllm=true"])
    with pytest.raises(ConfigError, match="needs vLLM installed"):
        check_rl_config(config.rl)
