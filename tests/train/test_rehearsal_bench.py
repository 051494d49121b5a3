"""benchmarks/rehearsal_multi_gpu.py: its cut-down settings load on configs/grpo_7b.yaml, the 1.5B config has
Qwen2.5-Coder-1.5B's size; ``slow``: the whole rehearsal on 2 gloo ranks (accelerate's launcher, the tiny model),
SFT and GRPO each SIGTERMed on rank 1 and resumed, final weights loaded and evaluated (~90 s on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/rehearsal_multi_gpu.py")


@pytest.mark.parametrize("cpu", [False, True])
@pytest.mark.parametrize("stage", ["sft", "rl"])
def test_the_rehearsal_settings_load_on_the_7b_config(bench, tmp_path, stage, cpu):
    from tritonrl.config import PipelineConfig, load_config

    args = bench.parse_args(["--run-dir", str(tmp_path)] + (["--cpu", "--size", "tiny"] if cpu else []))
    config = load_config(ROOT / "configs" / "grpo_7b.yaml", bench.stage_overrides(args, tmp_path / "m", stage),
                         schema=PipelineConfig)
    assert config.lora.enabled and config.run.save_total_limit == 1
    assert "--resume" in bench.launch_command(args, stage, tmp_path / "m", resume=True)


def test_the_real_size_model_has_qwen2_5_coder_1_5b_parameters(bench):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with torch.device("meta"):
        model = Qwen2ForCausalLM(Qwen2Config(**bench.SIZES["1.5b"]))
    assert 1.50e9 < sum(p.numel() for p in model.parameters()) < 1.56e9  # 1.54B, embeddings tied


@pytest.mark.slow
def test_two_gloo_ranks_killed_resumed_and_evaluated(bench, tmp_path):
    out = tmp_path / "reh.json"
    code = bench.main(["--size", "tiny", "--cpu", "--nproc", "2", "--run-dir", str(tmp_path / "run"), "--out",
                       str(out), "--sft-steps", "6", "--rl-steps", "6", "--completion-tokens", "16"])
    entry = json.loads(out.read_text())["runs"]["ddp"]
    assert code == 0, (tmp_path / "run" / "ddp.log").read_text()[-3000:]
    for stage in ("sft", "rl"):
        assert entry[stage]["killed_and_resumed"], entry[stage]
        assert entry[stage]["launches"][0]["sigterm"]["rank"] == 1
    assert entry["final"]["loads"] and entry["final"]["finite"]
    assert entry["eval"]["exit_code"] == 0 and entry["grpo_figures"]["mean_step_time_s"] > 0
