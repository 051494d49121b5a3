"""Short CPU runs of each stage on the tiny model: SFT, GRPO, RLOO, Best-of-N, and stop/resume."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tritonrl.common.manifest import RunManifest
from tritonrl.train.checkpoints import MARKER
from tritonrl.train.rl import run_rl
from tritonrl.train.sft import run_sft


def test_sft_step_then_rl_loads_exactly_what_sft_wrote(make_config, fake_verifier):
    sft = run_sft(make_config())
    assert sft.status == "done" and sft.global_step == 1 and sft.final_loss is not None
    manifest = RunManifest(sft.run_dir)
    sft_model = manifest.output("sft", "model")
    assert (Path(sft_model) / "adapter_config.json").exists()

    rl = run_rl(make_config("rl.init_from=sft"), verifier=fake_verifier)
    assert rl.status == "done" and rl.global_step == 1
    assert manifest.stage("grpo")["outputs"]["init_model"] == sft_model
    # RL on a merged SFT adapter is saved merged, so loading it keeps the SFT weights
    assert (Path(manifest.output("grpo", "model")) / "model.safetensors").exists()
    assert fake_verifier.calls == [2]  # one batched verify call for the step's 2 completions


def test_rl_without_sft_stage_is_a_config_error(make_config, fake_verifier):
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match="no stage 'sft'"):
        run_rl(make_config("rl.init_from=sft"), verifier=fake_verifier)


class StopOnFirstCall:
    """Fake verifier that sends this process SIGTERM during the first reward call (a mid-step kill)."""

    def __init__(self, inner):
        self.inner = inner

    def verify_many(self, items):
        if not self.inner.calls:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.inner.verify_many(items)


def test_sigterm_saves_and_resume_from_mirror_restores_curriculum(make_config, fake_verifier):
    mirror = f"run.mirror_url=memory://tritonrl-test-{uuid.uuid4().hex}/run"
    first = run_rl(make_config("rl.steps=2", mirror), verifier=StopOnFirstCall(fake_verifier))
    assert first.status == "interrupted" and first.global_step == 1
    manifest = RunManifest(first.run_dir)
    assert manifest.stage("grpo")["status"] == "interrupted"
    checkpoint = Path(first.run_dir) / "grpo" / "checkpoints" / "checkpoint-1"
    assert (checkpoint / MARKER).exists()
    saved = json.loads((checkpoint / "tritonrl_state.json").read_text())["curriculum"]
    assert saved["updates"] == 1

    with pytest.raises(Exception, match="--resume"):
        run_rl(make_config("rl.steps=2", mirror), verifier=fake_verifier)
    shutil.rmtree(first.run_dir)  # the machine is gone; the mirror has the run
    second = run_rl(make_config("rl.steps=2", mirror, "run.resume=true"), verifier=fake_verifier)
    assert second.status == "done" and second.global_step == 2
    metrics = json.loads(Path(manifest.output("grpo", "metrics")).read_text())
    assert metrics["curriculum"]["updates"] == 2  # 1 restored + 1 new: state survived the restart
    assert manifest.stage("grpo")["attempts"] == 2


@pytest.mark.parametrize("algo", ["grpo", "rloo"])
def test_online_rl_with_real_verifier(make_config, algo):
    result = run_rl(make_config(f"rl.algo={algo}", "rl.steps=2"))
    assert result.status == "done" and result.global_step == 2
    # An untrained tiny model writes no kernel: a strict verifier must give it exactly 0 (the good side is
    # test_real_verifier_reference_solution_beats_garbage and the smoke pipeline, where SFT'd models score).
    assert result.final_reward == 0.0


def test_best_of_n_real_verifier_keeps_only_verified_samples(make_config):
    result = run_rl(make_config("rl.algo=best-of-n"))
    assert result.status == "done"
    rounds = json.loads((Path(result.run_dir) / "best_of_n" / "rounds.json").read_text())
    assert len(rounds) == 1 and rounds[0]["samples"] == 4
    # a random tiny model never writes a correct kernel: nothing is kept, the model is unchanged
    assert rounds[0]["kept"] == 0 and result.model_path == rounds[0]["model"]


def test_best_of_n_round_with_fake_verifier(make_config, tiny_model_dir):
    from tests.helpers.fake_verifier import FakeVerifier, faster_by_text
    from tritonrl.train import best_of_n

    result = best_of_n.run_best_of_n(make_config("rl.algo=best-of-n", "data.max_tasks=1"), verifier=FakeVerifier(faster_by_text))
    assert result.status == "done" and result.global_step == 1
    manifest = RunManifest(result.run_dir)
    assert manifest.output("best_of_n", "model").endswith("round-0/model")
    assert (Path(manifest.output("best_of_n", "model")) / "model.safetensors").exists()


def test_cli_sigterm_mid_run_then_resume(make_config, tmp_path, tiny_model_dir, short_template):
    """SIGTERM once the first checkpoint is complete: the run saves, stops as interrupted (143), and resumes.

    A step of this tiny run takes ~0.1 s, and only the last 2 checkpoints are kept: with 4 steps the signal could
    land after the last one (it did, in CI). 20 steps leave seconds of margin; the resume finishes them."""
    steps = 20
    config = Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml"
    run_dir = tmp_path / "cli-run"
    cmd = [sys.executable, "-m", "tritonrl.cli", "rl", "--algo", "grpo", "--config", str(config),
           "--run-dir", str(run_dir), "--set", f"model.name_or_path={tiny_model_dir}",
           "--set", f"data.prompt_template={short_template}", "--set", "data.max_tasks=2",
           "--set", f"rl.steps={steps}", "--set", "run.save_steps=1", "--set", "rl.max_completion_length=8"]
    env = {**os.environ, "TRITON_INTERPRET": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    checkpoints = run_dir / "grpo" / "checkpoints"
    deadline = time.time() + 240
    while not any(checkpoints.glob(f"checkpoint-*/{MARKER}")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 143, out[-2000:]
    manifest = RunManifest(run_dir)
    assert manifest.stage("grpo")["status"] == "interrupted"
    stopped_at = max(int(p.name.split("-")[1]) for p in checkpoints.glob("checkpoint-*"))
    assert stopped_at < steps

    resumed = subprocess.run(cmd + ["--resume"], check=False, env=env, capture_output=True, text=True, timeout=400)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"steps={steps}" in resumed.stdout
    assert manifest.stage("grpo")["status"] == "done"
    state = json.loads((checkpoints / f"checkpoint-{steps}" / "tritonrl_state.json").read_text())
    assert state["curriculum"]["updates"] == steps  # restored count + the resumed steps' updates


def test_a_sigterm_after_the_last_step_stops_and_resume_writes_final(make_config, monkeypatch):
    """A signal that lands once the training loop is over (after the last step's checkpoint) stops the stage
    like any other: no final/, interrupted. Nothing is lost: the last step's checkpoint is complete, and --resume
    writes final/ from it (transformers runs one step past the last when resuming from it, at learning rate 0
    under the default linear schedule, hence no step count here)."""
    from transformers import TrainerCallback

    from tritonrl.train.stage_session import StageSession

    class SigtermAtTrainEnd(TrainerCallback):
        def on_train_end(self, args, state, control, **kwargs):
            signal.raise_signal(signal.SIGTERM)

    callbacks = StageSession.callbacks
    monkeypatch.setattr(StageSession, "callbacks", lambda self, stateful=None: callbacks(self, stateful)
                        + [SigtermAtTrainEnd()])
    first = run_sft(make_config())
    assert (first.status, first.global_step, first.model_path) == ("interrupted", 1, None)
    assert RunManifest(first.run_dir).stage("sft")["reason"] == "SIGTERM"
    monkeypatch.setattr(StageSession, "callbacks", callbacks)
    second = run_sft(make_config("run.resume=true"))
    assert second.status == "done" and (Path(second.model_path) / "adapter_model.safetensors").exists()


def test_a_sigterm_while_final_is_written_leaves_the_stage_done(make_config, monkeypatch):
    """Past the agreed answer the stage's outcome is fixed: a signal while ``final/`` is written is noted, and the
    stage, whose final model is complete, is done (every rank follows the same answer, not its own flag)."""
    from tritonrl.train.stage_session import StageSession

    save_final = StageSession.save_final

    def signalled_save_final(self, *args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        return save_final(self, *args, **kwargs)

    monkeypatch.setattr(StageSession, "save_final", signalled_save_final)
    with pytest.warns(UserWarning, match="SIGTERM arrived after sft's last step; the stage finished"):
        result = run_sft(make_config())
    assert result.status == "done" and RunManifest(result.run_dir).stage("sft")["status"] == "done"
    assert (Path(result.model_path) / "adapter_model.safetensors").exists()
