"""rl.generation_chunks: verification of chunk k beside the generation of chunk k+1, the serial path's rewards."""

from __future__ import annotations

import os
import time

import pytest

from tests.helpers.fake_verifier import FakeVerifier, faster_by_text
from tritonrl.common.reward import compute_reward
from tritonrl.tasks import get_task
from tritonrl.train import rl
from tritonrl.train.reward_adapters import VerifierReward
from tritonrl.train.reward_overlap import BackgroundVerification, generate_in_chunks

TASKS = {t.name: t for t in (get_task("l1_relu"), get_task("l1_gelu"))}  # keyed by name here


class SlowVerifier(FakeVerifier):
    """``faster_by_text`` verdicts after ``seconds`` per call (a verifier busy on its own processes)."""

    def __init__(self, seconds: float):
        super().__init__(faster_by_text)
        self.seconds = seconds

    def verify_many(self, items):
        time.sleep(self.seconds)
        return super().verify_many(items)


class Tokenizer:
    def batch_decode(self, ids, skip_special_tokens=True):
        return [f"class ModelNew: {row}" for row in ids]


class Trainer:
    processing_class = Tokenizer()


def fake_generate(seconds: float):
    def generate(prompt_ids, images, multimodal_fields, num_generations=None):
        time.sleep(seconds)
        return [[p[0] * 10 + 1, p[0] * 10 + 2] for p in prompt_ids], None
    return generate


def run_step(chunks: int, gen_s: float, verify_s: float):
    """One step's generation in ``chunks`` then the reward, as TRL calls them; (rewards, reward, seconds)."""
    keys = ["l1_relu", "l1_gelu"] * 4
    reward = VerifierReward(TASKS, verifier=SlowVerifier(verify_s), group_size=2)
    background = BackgroundVerification()
    reward.background = background
    background.task_keys = keys
    started = time.perf_counter()
    ids, _ = generate_in_chunks(Trainer(), fake_generate(gen_s), chunks, background, reward,
                                [[i] for i in range(8)], None, {}, 2)
    texts = Tokenizer().batch_decode(ids)
    completions = [[{"role": "assistant", "content": t}] for t in texts]  # TRL's conversational form
    rewards = reward(prompts=[None] * 8, completions=completions, task_key=keys)
    background.close()
    return rewards, reward, time.perf_counter() - started, texts


def test_chunked_rewards_are_the_serial_rewards_and_the_verification_is_hidden():
    rewards, reward, seconds, texts = run_step(chunks=4, gen_s=0.3, verify_s=0.25)
    serial = [compute_reward(faster_by_text(t), reward.reward_config) for t in texts]
    assert rewards == serial
    assert reward.verifier.calls == [2, 2, 2, 2]  # one verify_many per chunk, as each chunk finished
    health = reward.health[-1]
    # 4 chunks: the verifications of chunks 1-3 ran while chunks 2-4 were generated; only the last one's
    # 0.25 s of 1.0 s was waited for
    assert health["verify/time_s"] == pytest.approx(1.0, abs=0.2)
    assert health["verify/wait_s"] < 0.45
    assert health["verify/hidden_fraction"] > 0.55
    assert seconds < 4 * 0.3 + 4 * 0.25 - 0.5  # the serial path's time was gen + verify


def test_a_completion_the_background_did_not_see_is_verified_then_and_said_once(capsys):
    keys = ["l1_relu", "l1_gelu"]
    reward = VerifierReward(TASKS, verifier=FakeVerifier(faster_by_text), group_size=2)
    reward.background = background = BackgroundVerification()
    background.submit(reward, ["class ModelNew: a", "class ModelNew: b"], keys)
    rewards = reward(completions=["class ModelNew: a", "class ModelNew: B"], task_key=keys)
    background.close()
    assert rewards == [compute_reward(faster_by_text(t), reward.reward_config)
                       for t in ("class ModelNew: a", "class ModelNew: B")]
    err = capsys.readouterr().err
    assert "1 of 2 completions were not verified beside generation" in err
    assert "they part at character 16: TRL 'B', the chunk 'b'" in err  # why, said with it
    assert "1 completions verified beside generation were not in the reward's batch" in err
    said, background = background._said, BackgroundVerification()
    reward.background, background._said = background, said  # what a run's background has said, kept
    background.submit(reward, ["class ModelNew: c", "class ModelNew: d"], keys)
    reward(completions=["class ModelNew: c", "class ModelNew: D"], task_key=keys)
    background.close()
    assert "not verified beside generation" not in capsys.readouterr().err  # said once, whatever the texts


def test_chunks_must_divide_the_batch_and_exclude_what_they_cannot_overlap(make_config):
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match="generation_chunks = 3 must divide"):
        make_config("rl.generation_chunks=3")
    with pytest.raises(ConfigError, match="rl.verify_cache=true"):
        make_config("rl.generation_chunks=2", "rl.verify_cache=true")
    with pytest.raises(ConfigError, match="rl.turns > 1"):
        make_config("rl.generation_chunks=2", "rl.turns=2", "rl.num_generations=4", "rl.per_device_batch_size=4")
    with pytest.raises(ConfigError, match="x rl.trl.steps_per_generation = 6"):  # TRL's generation batch
        make_config("rl.generation_chunks=4", "rl.trl={steps_per_generation: 3}")
    make_config("rl.generation_chunks=4", "rl.trl={steps_per_generation: 2}")  # 2 x 2 = 4 completions
    with pytest.raises(ValueError, match="does not divide this rank's generation batch of 4"):
        background = BackgroundVerification()
        background.task_keys = ["a"] * 4
        generate_in_chunks(Trainer(), fake_generate(0), 3, background, None, [[1]] * 4, None, {})


@pytest.mark.parametrize("algo", ["grpo", "rloo"])  # GRPO's generate returns (ids, logprobs), RLOO's ids alone
def test_two_chunks_verify_each_chunk_as_it_is_generated(make_config, monkeypatch, algo):
    box = {}
    build_trainer = rl.build_trainer

    def build(*args, **kwargs):
        box["trainer"] = build_trainer(*args, **kwargs)
        return box["trainer"]

    monkeypatch.setattr(rl, "build_trainer", build)
    verifier = FakeVerifier(faster_by_text)
    config = make_config(f"rl.algo={algo}", "rl.generation_chunks=2", "rl.per_device_batch_size=4", "rl.steps=2")
    result = rl.run_rl(config, verifier=verifier)
    assert result.status == "done" and result.global_step == 2
    assert verifier.calls == [2, 2, 2, 2]  # two chunks of 2 per step, none verified again
    logged = [h for h in box["trainer"].state.log_history if "verify/hidden_fraction" in h]
    assert len(logged) == 2 and all(0 <= h["verify/hidden_fraction"] <= 1 for h in logged)
    # TRL's reward is the verifier's: the mean it logged is the mean of faster_by_text's rewards
    reward_key = next(k for k in logged[0] if k.startswith("rewards/verifier_reward/mean"))
    assert all(h[reward_key] == pytest.approx(h["verify/mean_reward"]) for h in logged)


def test_chunks_of_a_generation_that_serves_several_steps(make_config):
    """rl.trl.steps_per_generation = 2: one generation of 8 completions (two chunks of 4) serves two optimizer
    steps (verl's rollout batch over mini-batches): each chunk verified once, beside the next one's generation."""
    verifier = FakeVerifier(faster_by_text)
    config = make_config("rl.generation_chunks=2", "rl.per_device_batch_size=4", "rl.steps=2",
                         "rl.trl={steps_per_generation: 2}")
    result = rl.run_rl(config, verifier=verifier)
    assert result.status == "done" and result.global_step == 2
    assert verifier.calls == [4, 4]


def test_the_verification_time_counts_overlapping_calls_once():
    from tritonrl.train.reward_overlap import union_s

    assert union_s([]) == 0
    assert union_s([(0, 2), (1, 3), (5, 6)]) == 4  # two chunks' calls overlapping for 1 s, then a third
    assert union_s([(0, 4), (1, 2)]) == 4


def test_generation_holds_the_gpu_shared_so_a_timing_run_waits(tmp_path):
    """Around each chunk (and after the last, until the reward is collected) the trainer holds the GPU's file lock
    shared: a timing run's exclusive lock cannot be taken then, and can between chunks and after the collect."""
    from tritonrl.verify.judge.gpu_lock import GpuFileLock

    keys = ["l1_relu", "l1_gelu"] * 2
    reward = VerifierReward(TASKS, verifier=FakeVerifier(faster_by_text), group_size=2)
    background = BackgroundVerification(GpuFileLock("0", str(tmp_path)))
    reward.background, background.task_keys = background, keys
    timing = GpuFileLock("0", str(tmp_path))
    seen = []

    def generate(prompt_ids, images, multimodal_fields):
        fd = timing.try_hold()
        seen.append(fd is None)  # RLOO's form: the completion ids alone
        return [[p[0]] for p in prompt_ids]

    ids = generate_in_chunks(Trainer(), generate, 2, background, reward, [[i] for i in range(4)], None, {})
    assert seen == [True, True] and timing.try_hold() is None  # held during both chunks and after the last
    reward(completions=Tokenizer().batch_decode(ids), task_key=keys)
    fd = timing.try_hold()  # the reward collected: the GPU is free for timing runs
    assert fd is not None
    os.close(fd)
    background.close()
