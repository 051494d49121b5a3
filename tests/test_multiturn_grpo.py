"""Multi-turn GRPO on the tiny model (CPU): per-turn rewards and the discounted return reach TRL's trainer, the
second turn's prompt carries the first attempt's feedback, and a run stopped mid-way resumes."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import json
import signal
from pathlib import Path

import pytest

from tritonrl.common.manifest import RunManifest
from tritonrl.config import load_config
from tritonrl.train import multiturn
from tritonrl.verify.shared.verdict import Stage, VerifyResult

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from tritonrl.common.llm import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


class TurnVerifier:
    """Every first turn fails at compile (with a known error), every second turn is correct."""

    def __init__(self, stop_on_first_call=False):
        self.calls, self.stop = [], stop_on_first_call

    def verify_many(self, items):
        self.calls.append(len(items))
        if self.stop and len(self.calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # a mid-step kill: the step finishes, saves, stops
        if len(self.calls) % 2:
            return [VerifyResult(Stage.COMPILE, valid=True, flags=["import_error"],
                                 error="NameError: name 'tl' is not defined") for _ in items]
        return [VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
                for _ in items]


def make_config(tiny_model_dir, tmp_path, *overrides):
    template = tmp_path / "short.txt"
    template.write_text("Write ModelNew with Triton for:\n{task_source}\n")
    return load_config(None, [
        f"model.name_or_path={tiny_model_dir}", "model.dtype=float32",
        "data.levels=[1]", "data.max_tasks=2", f"data.prompt_template={template}",
        f"run.run_dir={tmp_path / 'run'}", "run.save_steps=1", "run.report_to=none",
        "rl.num_generations=4", "rl.per_device_batch_size=4", "rl.max_completion_length=8",
        "rl.steps=1", "rl.use_cpu=true", "rl.learning_rate=1e-3", "rl.turns=2",
        "verify.device=cpu", "verify.timing=false", *overrides])


def test_two_turn_grpo_trains_on_discounted_returns(tiny_model_dir, tmp_path, monkeypatch):
    from tritonrl.train.rl import run_rl

    built = []
    real = multiturn.build_refinement_messages
    monkeypatch.setattr(multiturn, "build_refinement_messages",
                        lambda *a, **kw: built.append(real(*a, **kw)) or built[-1])
    verifier = TurnVerifier()
    result = run_rl(make_config(tiny_model_dir, tmp_path), verifier=verifier)
    assert result.status == "done" and result.global_step == 1
    assert verifier.calls == [2, 2]  # 4 slots = 2 trajectories x 2 turns: one verify batch per turn

    # turn 2's prompt: the task, the first attempt (assistant), then the verifier's feedback on it
    second = [b for b in built if b.n_attempts == 1]
    assert len(second) == 2 and second[0].messages[-2]["role"] == "assistant"
    assert "failed at the compile stage" in second[0].messages[-1]["content"]
    assert "NameError: name 'tl' is not defined" in second[0].messages[-1]["content"]

    logged = {k: v for entry in _history(result) for k, v in entry.items()}
    # r = [0, 1] per trajectory: G_2 = 1, G_1 = 0 + 0.4 * 1 (Kevin's sum with gamma 0.4)
    assert logged["multiturn/reward_t1"] == 0.0 and logged["multiturn/reward_t2"] == 1.0
    assert logged["multiturn/return_t1"] == pytest.approx(0.4) and logged["multiturn/return_t2"] == 1.0
    assert logged["multiturn/correct_t1"] == 0.0 and logged["multiturn/correct_t2"] == 1.0
    assert logged["rewards/turn_return/mean"] == pytest.approx(0.7)  # what GRPO's advantages were built from
    assert logged["verify/correct_rate"] == 0.0  # verify/* and the curriculum: first turns only


class MixedFirstTurn:
    """Turn 1: the first trajectory correct, the second fails at compile; turn 2: both correct. With gamma 0.4 the
    returns are [1.4, 1.0] and [0.4, 1.0]: turn-1 returns differ, turn-2 returns are equal."""

    def __init__(self):
        self.calls = 0

    def verify_many(self, items):
        self.calls += 1
        correct = VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
        failed = VerifyResult(Stage.COMPILE, valid=True, error="NameError: name 'tl' is not defined")
        return [correct, failed] if self.calls % 2 else [correct, correct]


def test_advantages_compare_returns_within_turn(tiny_model_dir, tmp_path, monkeypatch):
    """A group of 2 trajectories x 2 turns, returns [1.4, 1.0] and [0.4, 1.0]. The two turn-2 samples are equally
    good: advantage 0 each; the turn-1 samples get +-a. TRL's baseline (the mean of all four, 0.95) gave both
    turn-2 samples +0.05 and the turn-1 pair an offset of -0.05, a bias from the turn alone."""
    import statistics

    from trl import GRPOTrainer

    from tritonrl.train.rl import run_rl

    seen = []
    real = GRPOTrainer._compute_loss

    def compute_loss(self, model, inputs):  # the advantages the loss is computed with
        seen.append(inputs["advantages"].tolist())
        return real(self, model, inputs)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", compute_loss)
    result = run_rl(make_config(tiny_model_dir, tmp_path), verifier=MixedFirstTurn())
    assert result.status == "done" and len(seen) == 1
    a = 0.5 / (statistics.stdev([1.4, 1.0, 0.4, 1.0]) + 1e-4)  # rl.scale_rewards=batch: the batch's std
    assert sorted(seen[0]) == pytest.approx([-a, 0.0, 0.0, a], abs=1e-5)
    logged = {k: v for entry in _history(result) for k, v in entry.items()}
    assert logged["signal/frac_zero_std_groups"] == 0.5  # same-turn groups: turn 1 varies, turn 2 does not


def test_turn_advantages_split_groups_by_turn_and_scale_as_trl():
    turns = [1, 2, 1, 2, 1, 2, 1, 2]  # two groups of 4 slots: 2 trajectories x 2 turns each
    returns = [1.4, 1.0, 0.4, 1.0, 3.0, 2.0, 1.0, 0.0]
    none = multiturn.turn_advantages(returns, turns, 4, "none")
    assert none == pytest.approx([0.5, 0.0, -0.5, 0.0, 1.0, 1.0, -1.0, -1.0])
    for t in (1, 2):  # within every (group, turn) the advantages sum to 0: no turn is favoured
        for start in (0, 4):
            assert sum(none[i] for i in range(start, start + 4) if turns[i] == t) == pytest.approx(0.0)
    group = multiturn.turn_advantages(returns, turns, 4, "group")
    assert group[0] == pytest.approx(0.5 / (0.7071068 + 1e-4)) and group[1] == 0.0
    with pytest.raises(ValueError, match="groups of 4"):
        multiturn.turn_advantages(returns[:6], turns[:6], 4)


def test_multiturn_reward_takes_the_run_settings():
    """rl.shuffle_rewards, rl.verify_cache, run.seed and the group size reach the multi-turn reward: they were
    dropped, so a multi-turn control was not shuffled and every group looked flat (frac_zero_std_groups 1.0)."""
    config = load_config(None, ["rl.turns=2", "rl.num_generations=4", "rl.per_device_batch_size=4",
                                "rl.shuffle_rewards=true", "rl.verify_cache=true", "run.seed=3"])
    reward = multiturn.refinement_reward(config, [], [], verifier=TurnVerifier())
    assert reward.group_size == 4 and reward.cache == {} and reward.shuffle_rng is not None

    turns = [1, 2] * 4
    returns = [1.0, 10.0, 2.0, 20.0, 3.0, 30.0, 4.0, 30.0]
    reward.last_results = [VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)] * 8
    logged = {}
    trained = reward(turn=turns, turn_reward=returns, turn_return=returns, task_key=["t"] * 8,
                     log_metric=logged.__setitem__)
    assert trained != returns  # shuffled ...
    assert sorted(trained[0::2]) == [1.0, 2.0, 3.0, 4.0] and sorted(trained[1::2]) == [10.0, 20.0, 30.0, 30.0]
    assert reward.last_trained == (turns, trained)  # ... within turn, and the trainer's advantages use it
    assert logged["signal/frac_zero_std_groups"] == 0.25  # of the true returns: only group 2's turn 2 is flat


def test_config_refuses_one_trajectory_per_group():
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match=r"rl\.num_generations = 2 holds one trajectory .* use >= 4"):
        load_config(None, ["rl.turns=2", "rl.num_generations=2", "rl.per_device_batch_size=2"])


def _history(result):
    metrics = json.loads(Path(RunManifest(result.run_dir).output("grpo", "metrics")).read_text())
    return [entry for entry in metrics["log_history"] if "multiturn/reward_t1" in entry or "verify/correct_rate"
            in entry or "rewards/turn_return/mean" in entry]


def test_multiturn_run_stopped_mid_step_resumes(tiny_model_dir, tmp_path):
    from tritonrl.train.rl import run_rl

    first = run_rl(make_config(tiny_model_dir, tmp_path, "rl.steps=2"), verifier=TurnVerifier(True))
    assert first.status == "interrupted" and first.global_step == 1
    second = run_rl(make_config(tiny_model_dir, tmp_path, "rl.steps=2", "run.resume=true"), verifier=TurnVerifier())
    assert second.status == "done" and second.global_step == 2
    manifest = RunManifest(second.run_dir)
    assert manifest.stage("grpo")["attempts"] == 2
    metrics = json.loads(Path(manifest.output("grpo", "metrics")).read_text())
    assert metrics["curriculum"]["updates"] == 2  # one first-turn batch per step, restored across the restart


def test_config_refuses_turns_that_do_not_fill_groups():
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match="rl.num_generations = 6 must be a multiple of rl.turns = 4"):
        load_config(None, ["rl.turns=4", "rl.num_generations=6", "rl.per_device_batch_size=8"])
    with pytest.raises(ConfigError, match="rl.turns = 2: multi-turn refinement is implemented for grpo only"):
        load_config(None, ["rl.turns=2", "rl.algo=rloo"])
