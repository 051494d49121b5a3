"""The four-GPU learning demonstration's driver end to end at toy size on the CPU (benchmarks/studies/learning_demo_gpu.py).

Two fake GPU ids run the queue the device runs: SFT with its checkpoints validated, the temperatures, the RL pool,
the four arms, the held-out evaluations and the summary, every key the issue names. Slow: a few minutes of CPU.
"""

import importlib.util
import json
from pathlib import Path

import pytest

from tritonrl.taskgen import generate_tasks
from tritonrl.verify.shared.verdict import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[2]


class AcceptAll:
    def verify_many(self, items):
        return [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
                for _ in items]


def driver():
    spec = importlib.util.spec_from_file_location("learning_demo_gpu", ROOT / "benchmarks" / "studies" / "learning_demo_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_driver_runs_every_phase_and_writes_the_summary(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    run = tmp_path / "run"
    salt = "test-salt"
    generate_tasks(24, 1, "train", run / "tasks" / "train_all", verifier=AcceptAll(), split_salt=salt)
    generate_tasks(20, 2, "heldout", run / "tasks" / "heldout_pool", verifier=AcceptAll(), split_salt=salt)
    sets = [f"run.run_dir={run}", f"model.name_or_path={run}/base_model",
            f"data.source={run}/tasks/rl", f"data.sft_sources=[{run}/tasks/sft]", f"eval.tasks={run}/tasks/heldout",
            "sft.use_cpu=true", "rl.use_cpu=true", "eval.device=cpu", "sft.bf16=false", "rl.bf16=false",
            "sft.max_steps=8", "run.save_steps=4", "rl.steps=1", "rl.per_device_batch_size=16", "eval.batch_size=16",
            "verify.workers=2"]
    study = ["--sft-n", "14", "--validation-n", "4", "--validation-k", "1", "--heldout-k", "2", "--turns-k", "1",
             "--pool-k", "2", "--pool-max", "6", "--timed-per-arm", "0", "--hidden", "32", "--layers", "1",
             "--heads", "2", "--kv-heads", "1", "--vocab", "2000", "--torch-threads", "1"]
    args = ["--config", "configs/demo4_rehearsal.yaml", *sum((["--set", s] for s in sets), []), *study]
    g = driver()
    prepared = g.prepare(g.load(g.parse_args(args)), g.parse_args(args))
    assert not any(prepared["shared_op_combinations"].values())
    assert g.main([*args, "--gpus", "c0,c1", "--foreground"]) == 0
    summary = json.loads((run / "learning_demo_gpu.json").read_text())
    for key in ("criterion", "criterion_met", "device", "heldout_tasks", "rl_minus_sft", "hypotheses", "runs",
                "arms", "training", "timed", "gpu_seconds", "decoding", "sft_selection", "reference_check"):
        assert key in summary, key
    assert set(summary["rl_minus_sft"]) >= {"mean", "ci95"}
    assert {r["run"] for r in summary["runs"]} >= {f"{m}@1.0" for m in ("sft", "grpo_s0", "grpo_s1", "control_s0",
                                                                       "control_s1")}
    assert (run / "figures" / "learning_demo_gpu.png").exists()
