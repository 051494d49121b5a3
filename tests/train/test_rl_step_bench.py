"""benchmarks/rl_step.py: both paths' settings load and mean what the JSON says; the GPU defaults are the issue's
sizes; the real candidates are the tasks' own; the targets are checked only on a GPU. ``slow``: the whole CPU
rehearsal (``--cpu-rehearsal``: tiny model, real verifier on the interpreter; ~2-3 min on 2 busy cores)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "rl_step.py"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("rl_step", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["rl_step"] = module
    spec.loader.exec_module(module)
    return module


def test_the_gpu_defaults_are_the_issues_sizes(bench):
    args = bench.parse_args([])
    assert args.completions >= 64 and args.tokens >= 512 and args.compile_backend == "inductor"
    assert args.paths.split(",") == ["fast", "eager"]
    cpu = bench.parse_args(["--cpu-rehearsal"])
    assert cpu.compile_backend == "eager" and cpu.completions == 16


@pytest.mark.parametrize("path", ["fast", "eager"])
@pytest.mark.parametrize("cpu", [False, True])
def test_each_path_is_the_grpo_stage_with_its_generation(bench, tmp_path, path, cpu):
    args = bench.parse_args(["--cpu-rehearsal"] if cpu else [])
    config = bench.path_config(args, tmp_path / "model", tmp_path / "run", path)
    rl = config.rl
    assert rl.generation == path and rl.generation_chunks == (args.chunks if path == "fast" else 1)
    assert rl.per_device_batch_size * rl.gradient_accumulation_steps == args.completions
    assert rl.max_completion_length == args.tokens == rl.trl["generation_kwargs"]["min_new_tokens"]  # forced
    assert rl.generation_compile == {"backend": args.compile_backend, "mode": args.compile_mode}
    assert config.model.gradient_checkpointing and config.verify.device == ("cpu" if cpu else "cuda")
    assert sorted(config.data.tasks) == sorted(args.tasks.split(","))


def test_warm_children_and_the_correctness_only_reward_reach_the_verifier_on_a_gpu(bench, tmp_path):
    args = bench.parse_args(["--warm-children", "--warm-spares", "--no-timing", "--verify-workers", "16"])
    verify = bench.path_config(args, tmp_path / "model", tmp_path / "run", "fast").verify
    assert verify.warm_children and verify.warm_spares and not verify.timing and verify.workers_per_gpu == 16
    plain = bench.path_config(bench.parse_args([]), tmp_path / "model", tmp_path / "run", "fast").verify
    assert not plain.warm_children and not plain.warm_spares and plain.timing


def test_a_generation_serving_several_steps_is_the_fast_paths_alone(bench, tmp_path):
    """--steps-per-generation: one generation (in chunks) for several optimizer steps, on the fast path; the eager
    path stays TRL's own (one generation a step); the run covers two generations by default."""
    args = bench.parse_args(["--steps-per-generation", "16"])  # 64 completions in micro-batches of 16: 4 a step
    assert args.cycle == 4 and args.fast_steps == 8
    fast = bench.path_config(args, tmp_path / "model", tmp_path / "run", "fast").rl
    eager = bench.path_config(args, tmp_path / "model", tmp_path / "run", "eager").rl
    assert fast.trl["steps_per_generation"] == 16 and "steps_per_generation" not in eager.trl
    with pytest.raises(SystemExit, match="must be a multiple of the gradient accumulation steps"):
        bench.parse_args(["--steps-per-generation", "6"])


def test_the_reward_judges_real_candidates_in_turn(bench):
    from tests.helpers.fake_verifier import FakeVerifier
    from tritonrl.config import VerifyConfig
    from tritonrl.tasks import get_task

    tasks = [get_task("l1_relu")]
    reward = bench.candidate_reward(tasks, bench.CPU_KINDS, VerifyConfig(device="cpu"))
    reward.verifier.close()
    reward.verifier = FakeVerifier()
    items = [reward.item(tasks[0].key, "anything the model wrote") for _ in range(5)]
    assert items[0].code.endswith(tasks[0].solution) and "ModelNew" in items[0].code
    assert len({item.code for item in items}) == 5  # each a distinct file
    assert reward.kinds_seen == {"right": 2, "wrong_constant": 1, "pytorch_fallback": 1, "syntax_error": 1}


def test_the_targets_are_checked_on_a_gpu_only(bench):
    fast = {"generation_tokens_per_s": 6000.0, "recompiles_after_step_1": 0, "reward_hidden_fraction": 0.5}
    eager = {"generation_tokens_per_s": 1000.0}
    assert bench.done_when(fast, eager, cpu=True) is None
    assert bench.done_when(fast, eager, cpu=False) == {
        "generation_tokens_per_s_at_least_5000": True, "no_recompiles_after_step_1": True,
        "at_least_5x_eager": True, "reward_hidden_fraction_at_least_0.8": False}
    assert bench.done_when(fast, None, cpu=False)["at_least_5x_eager"] is False  # no eager figure: not shown


@pytest.mark.slow
def test_the_cpu_rehearsal_writes_the_gpu_json_shape(bench, tmp_path):
    out = tmp_path / "rl_step.json"
    bench.main(["--cpu-rehearsal", "--out", str(out), "--fast-steps", "2", "--eager-steps", "2"])
    data = json.loads(out.read_text())
    for key in ("device", "model_parameters", "completions_per_step", "completion_tokens", "generation_tokens_per_s",
                "step_s", "phases_s", "reward_hidden_fraction", "recompiles_after_step_1", "peak_memory_gib",
                "fast_over_eager", "eager"):
        assert key in data, key
    assert set(data["phases_s"]) == {"generation", "reward_wait", "forward_backward", "optimizer", "other"}
    assert data["recompiles_after_step_1"] == 0 and data["fast"]["generation"] == "fast"
    assert 0 <= data["reward_hidden_fraction"] <= 1 and data["eager"]["reward_hidden_fraction"] == 0


def test_a_failing_path_is_recorded_and_the_other_still_runs(bench, tmp_path, monkeypatch):
    calls = []

    def run_path(args, model_dir, path):
        calls.append(path)
        if path == "fast":
            raise RuntimeError("inductor failed")
        return {"path": path, "generation_tokens_per_s": 100.0}

    monkeypatch.setattr(bench, "run_path", run_path)
    monkeypatch.setattr(bench, "build", lambda args: (tmp_path, {"size": "tiny", "parameters": 1}))
    out = bench.main(["--cpu-rehearsal", "--out", str(tmp_path / "out.json")])
    assert calls == ["fast", "eager"] and out["fast"]["error"] == "RuntimeError: inductor failed"
    assert "generation_tokens_per_s" not in out  # no headline from a failed path
    assert json.loads((tmp_path / "out.json").read_text())["eager"]["generation_tokens_per_s"] == 100.0
