"""rl.reward_beside_training: each optimizer step of a generation waits only for its own chunk's rewards."""

from __future__ import annotations

import contextlib
import threading

import pytest

from tests.helpers.fake_verifier import FakeVerifier, faster_by_text
from tritonrl.train import rl
from tritonrl.train.step_rewards import ChunkCancelled, ChunkScoring

BESIDE = ("rl.generation_chunks=2", "rl.per_device_batch_size=4", "rl.gradient_accumulation_steps=1",
          "rl.trl={steps_per_generation: 2}", "rl.reward_beside_training=true")


def test_each_chunk_is_scored_when_its_step_asks_and_every_model_call_stays_on_the_trainer_thread(
        make_config, monkeypatch):
    """One generation of two chunks of 4 serves two optimizer steps: both chunks are generated and their old
    log-probs computed before the first step, on the trainer's thread; step 1 collects chunk 0's verdicts, step 2
    chunk 1's; each step trains on one chunk's completions, with TRL's loss normaliser counting that step's."""
    from trl import GRPOTrainer

    box, calls, scored, losses = {}, [], [], []
    build_trainer = rl.build_trainer
    main = threading.current_thread()

    def build(*args, **kwargs):
        box["trainer"] = build_trainer(*args, **kwargs)
        box["trainer"].reward_overlap[1].lease = box["lease"] = RecordingLease()  # a GPU's file lock, on a CPU
        return box["trainer"]

    def recorded(name):
        real = getattr(GRPOTrainer, name)

        def record(self, *args, **kwargs):
            import torch

            calls.append((name, threading.current_thread() is main, self.state.global_step, torch.is_grad_enabled()))
            return real(self, *args, **kwargs)
        return record

    real_score, real_loss = rl.VerifierReward.score, GRPOTrainer.compute_loss

    def score(reward, completions, task_key):
        scored.append((box["trainer"].state.global_step, len(completions)))
        return real_score(reward, completions, task_key)

    def compute_loss(self, model, inputs, *args, **kwargs):
        box.setdefault("held", []).append(box["lease"].held)
        losses.append((self.state.global_step, float(inputs["num_items_in_batch"]),
                       float(inputs["completion_mask"].sum()), len(inputs["completion_ids"])))
        return real_loss(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(rl, "build_trainer", build)
    for name in ("_generate_single_turn", "_get_per_token_logps_and_entropies"):
        monkeypatch.setattr(GRPOTrainer, name, recorded(name))
    monkeypatch.setattr(rl.VerifierReward, "score", score)
    monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)
    verifier = FakeVerifier(faster_by_text)
    result = rl.run_rl(make_config(*BESIDE, "rl.steps=2"), verifier=verifier)

    assert result.status == "done" and result.global_step == 2
    assert type(box["trainer"]).__name__.startswith("StepRewards")
    assert verifier.calls == [4, 4]  # each chunk verified once, as it was generated
    assert all(on_main for _, on_main, _, _ in calls)  # the trainer's thread made every model call
    generated = [step for name, _, step, _ in calls if name == "_generate_single_turn"]
    old_logps = [step for name, _, step, grad in calls if name == "_get_per_token_logps_and_entropies" and not grad]
    assert generated == [0, 0] and old_logps == [0, 0]  # both chunks, before the first optimizer step
    assert scored == [(0, 4), (1, 4)]  # chunk 0's rewards in step 1, chunk 1's only in step 2
    # one step a chunk: 4 completions; TRL's normaliser (num_items x accumulation / steps_per_generation = / 2)
    # is the step's own loss tokens
    assert [(step, n) for step, _, _, n in losses] == [(0, 4), (1, 4)]
    assert all(items / 2 == tokens > 0 for _, items, tokens, _ in losses)
    health = [h for h in box["trainer"].state.log_history if "verify/hidden_fraction" in h]
    assert len(health) == 2 and all(0 <= h["verify/hidden_fraction"] <= 1 for h in health)
    # the GPU held shared while chunk 1 was still verified (step 1's training), not after its collect
    assert box["held"] == [1, 0] and box["lease"].held == 0 and box["lease"].holds >= 3


class RecordingLease:
    """A GpuFileLock's ``hold(shared=True)``, counted."""

    def __init__(self):
        self.held = self.holds = 0

    @contextlib.contextmanager
    def hold(self, shared=False):
        assert shared
        self.held += 1
        self.holds += 1
        try:
            yield 0.0
        finally:
            self.held -= 1


def test_without_it_the_first_step_scores_the_whole_generation(make_config, monkeypatch):
    """The control: rl.generation_chunks alone, the same generation: TRL scores all 8 completions in step 1."""
    scored, real_score = [], rl.VerifierReward.score
    monkeypatch.setattr(rl.VerifierReward, "score",
                        lambda reward, c, k: scored.append(len(c)) or real_score(reward, c, k))
    result = rl.run_rl(make_config(*BESIDE[:-1], "rl.steps=2"), verifier=FakeVerifier(faster_by_text))
    assert result.status == "done" and scored == [8]


class FakeTrainer:
    """What ChunkScoring needs of a trainer: ``_generate_and_score_completions``, here a script."""

    def __init__(self, script):
        self.script = script

    def _generate_and_score_completions(self, rows):
        return self.script(rows)


def test_a_chunk_error_reaches_the_trainer_thread_before_or_after_its_reward():
    from tritonrl.train.reward_overlap import current_chunk

    def fails_before(rows):
        raise ValueError("generation broke")

    part = ChunkScoring(FakeTrainer(fails_before), [1], 0)
    with pytest.raises(ValueError, match="generation broke"):
        part.serve("reward")

    def fails_after(rows):
        chunk = current_chunk()
        assert chunk.on_trainer_thread(threading.current_thread) is threading.main_thread()
        chunk.park()
        raise KeyError("advantages broke")

    part = ChunkScoring(FakeTrainer(fails_after), [1], 0)
    part.serve("reward")  # parked at the reward: no error yet
    with pytest.raises(KeyError, match="advantages broke"):
        part.finish()


def test_a_chunk_scored_without_a_reward_call_is_finished_all_the_same():
    part = ChunkScoring(FakeTrainer(lambda rows: {"rows": rows}), [7], 0)
    part.serve("reward")  # it ended instead of parking
    assert part.finish() == {"rows": [7]}


def test_a_parked_chunk_that_is_not_needed_ends():
    from tritonrl.train.reward_overlap import current_chunk

    part = ChunkScoring(FakeTrainer(lambda rows: current_chunk().park() or {"rows": rows}), [1], 3)
    part.serve("reward")
    part.cancel()
    part._thread.join(timeout=10)
    assert not part._thread.is_alive() and isinstance(part.error, ChunkCancelled)


def test_the_reward_beside_training_needs_a_chunk_a_step(make_config):
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match="needs rl.generation_chunks > 1"):
        make_config("rl.reward_beside_training=true")
    with pytest.raises(ConfigError, match=r"steps_per_generation = rl.generation_chunks x .* = 2 \(it is 1\)"):
        make_config("rl.generation_chunks=2", "rl.per_device_batch_size=4", "rl.reward_beside_training=true")
    with pytest.raises(ConfigError, match="grpo, not rloo"):
        make_config(*BESIDE, "rl.algo=rloo")
    with pytest.raises(ConfigError, match="not a multiple of rl.num_generations = 4"):
        make_config(*BESIDE[:2], "rl.num_generations=4", "rl.per_device_batch_size=2",
                    "rl.trl={steps_per_generation: 2}", "rl.reward_beside_training=true")
    make_config(*BESIDE)


def test_a_chunk_is_generated_with_a_short_thread_switch_interval_then_python_gets_its_own_back():
    """The judge's threads share the trainer's GIL; the decode loop gives it up at every token and, at Python's
    5 ms switch interval, may wait that long to get it back. While a chunk is generated the interval is the
    configured one, and Python's own afterwards (an error too)."""
    import sys

    from tritonrl.train.reward_overlap import BackgroundVerification, generate_in_chunks

    seen = []

    class Tokenizer:
        def batch_decode(self, ids, skip_special_tokens=True):
            return ["x"] * len(ids)

    class Trainer:
        processing_class = Tokenizer()

    class Reward:
        verifier = FakeVerifier(faster_by_text)

        def item(self, key, completion):
            from tritonrl.tasks import get_task
            from tritonrl.verify import VerifyItem

            return VerifyItem(get_task("l1_relu"), code=completion)

    def generate(prompt_ids, images, fields):
        seen.append(sys.getswitchinterval())
        if len(seen) == 3:
            raise RuntimeError("the third chunk broke")
        return [[1]] * len(prompt_ids), None

    before = sys.getswitchinterval()
    background = BackgroundVerification(switch_interval_s=0.0005)
    background.task_keys = ["l1_relu"] * 4
    generate_in_chunks(Trainer(), generate, 2, background, Reward(), [[0]] * 4, None, {})
    assert seen == [0.0005, 0.0005] and sys.getswitchinterval() == before
    with pytest.raises(RuntimeError, match="third chunk"):
        generate_in_chunks(Trainer(), generate, 2, background, Reward(), [[0]] * 4, None, {})
    assert sys.getswitchinterval() == before
    background.close()
