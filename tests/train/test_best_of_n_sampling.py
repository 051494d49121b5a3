"""Best-of-N's sampling (``best_of_n.sample_round``): ``best_of_n.batch_size`` tasks a generate call, at
``rl.temperature`` and ``rl.top_p``; a call's samples judged while the next call generates; each judged call saved
at once, so a round killed while sampling resumes with the tasks not yet judged.

Study two's third restarted hold lost a Best-of-N arm to the old way (every task's samples one generate call of a
single prompt, judged only once all were drawn, nothing saved until then): 1,920 prompts x 8 samples ran for 25
minutes on an H200 and the machine went back with nothing written (docs/results.md)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.helpers.fake_verifier import FakeVerifier, names_model_new
from tritonrl.tasks import get_task
from tritonrl.train import best_of_n as bon
from tritonrl.train.reward_adapters import VerifierReward

TASKS = ["l1_relu", "l1_sigmoid", "l1_tanh", "l1_gelu", "l1_softmax"]


class Generator:
    """Records each call's prompts; completion j of a task is ``ModelNew <key> <j>`` (correct for the fake
    verifier) when j is even, else ``nothing`` (an extraction failure)."""

    calls: list[list[str]] = []
    sampling = None
    fail_on_call: int | None = None
    on_call = None

    def __init__(self, model, tokenizer, sampling):
        type(self).sampling = sampling

    def generate(self, prompts, k):
        calls = type(self).calls
        calls.append([_key(p) for p in prompts])
        if type(self).on_call:
            type(self).on_call(len(calls))
        if type(self).fail_on_call == len(calls):
            raise RuntimeError("the machine went back")
        return [[f"class ModelNew {_key(p)} {j}" if j % 2 == 0 else "nothing" for j in range(k)] for p in prompts]


def short(key: str) -> str:
    """``bundled/l1_relu@base:c107...`` -> ``l1_relu``."""
    return key.split("/")[-1].split("@")[0]


def _key(messages) -> str:
    return messages[-1]["content"].strip("<>")  # the fixture's prompt: the task's short name in <>


@pytest.fixture()
def sampler(monkeypatch, make_config, tmp_path):
    Generator.calls, Generator.fail_on_call, Generator.on_call = [], None, None
    monkeypatch.setattr(bon, "HFGenerator", Generator)
    monkeypatch.setattr(bon, "build_messages", lambda task, template: [{"role": "user", "content": f"<{short(task.key)}>"}])
    tasks = [get_task(key) for key in TASKS]

    def run(*overrides, verifier=None, partial=None, stop=None):
        config = make_config("best_of_n.n=4", "best_of_n.top_k=2", "best_of_n.batch_size=2", *overrides)
        reward = VerifierReward({t.key: t for t in tasks}, verifier=verifier or FakeVerifier(names_model_new))
        return bon.sample_round(None, None, tasks, config, reward, partial, stop)

    return run, tasks, tmp_path / "samples.rank-0-of-1.partial.jsonl"


def test_tasks_are_sampled_a_batch_a_call_at_rl_temperature_and_top_p(sampler):
    run, tasks, _ = sampler
    samples = run("rl.top_p=0.95", "rl.temperature=1.0")
    assert Generator.calls == [TASKS[0:2], TASKS[2:4], TASKS[4:5]]
    assert Generator.sampling.top_p == pytest.approx(0.95) and Generator.sampling.temperature == 1.0
    assert [short(s.task_key) for s in samples] == [key for key in TASKS for _ in range(4)]
    assert [s.correct for s in samples[:4]] == [True, False, True, False]
    assert [s.completion for s in samples[:2]] == ["class ModelNew l1_relu 0", "nothing"]


def test_a_call_is_judged_while_the_next_one_generates(sampler):
    """The verifier of call 1's samples waits until call 2 has begun: judged only after all generation, it would
    wait in vain (and the round fail)."""
    run, _, _ = sampler
    second_call = threading.Event()
    Generator.on_call = lambda n: second_call.set() if n == 2 else None

    class WaitsForTheNextCall(FakeVerifier):
        def verify_many(self, items):
            if not self.calls and not second_call.wait(timeout=30):
                raise AssertionError("call 1 was judged only after generation stopped")
            return super().verify_many(items)

    verifier = WaitsForTheNextCall(names_model_new)
    samples = run(verifier=verifier)
    assert verifier.calls == [8, 8, 4] and len(samples) == 20


def test_each_judged_call_is_saved_and_a_killed_round_resumes_with_the_rest(sampler):
    run, _, partial = sampler
    Generator.fail_on_call = 3
    with pytest.raises(RuntimeError, match="went back"):
        run(partial=partial)
    lines = partial.read_text().splitlines()
    assert [len(json.loads(line)) for line in lines] == [8]  # call 1, judged while call 2 generated; call 2 unjudged
    assert all(row["correct"] == (row["completion"] != "nothing") for row in json.loads(lines[0]))

    with partial.open("a") as f:
        f.write('[{"task_key": "bundled/l1_tanh", "prom')  # a line the kill cut short
    Generator.calls, Generator.fail_on_call = [], None
    samples = run(partial=partial)
    assert Generator.calls == [TASKS[2:4], TASKS[4:5]]  # the saved tasks are not sampled again
    assert [short(s.task_key) for s in samples] == [key for key in TASKS for _ in range(4)]
    assert sum(s.correct for s in samples) == 10
    # the cut line is gone, and the calls appended after it are whole lines: a second resume has them all
    assert [len(json.loads(line)) for line in partial.read_text().splitlines()] == [8, 8, 4]


def test_a_stop_asked_while_sampling_starts_no_further_call_and_keeps_the_judged_ones(sampler):
    """A SIGTERM (the session's flag) after call 2 began: call 2 is still judged and saved, call 3 never starts,
    and the round says it did not finish (None); the resume draws only the last task."""
    run, _, partial = sampler
    assert run(partial=partial, stop=lambda: len(Generator.calls) >= 2) is None
    assert Generator.calls == [TASKS[0:2], TASKS[2:4]]
    assert [len(json.loads(line)) for line in partial.read_text().splitlines()] == [8, 8]
    Generator.calls = []
    assert len(run(partial=partial)) == 20 and Generator.calls == [TASKS[4:5]]


def test_the_round_saves_its_shard_and_removes_the_partial_file(sampler, make_config, tmp_path):
    _, tasks, _ = sampler
    config = make_config("best_of_n.n=2", "best_of_n.batch_size=3")
    reward = VerifierReward({t.key: t for t in tasks}, verifier=FakeVerifier(names_model_new))
    samples = bon.sample_shards(None, None, tasks, config, reward, tmp_path)
    assert len(samples) == 10 and (tmp_path / "samples.jsonl").exists()
    assert not list(tmp_path.glob("*.partial.jsonl"))


def test_batch_size_is_checked_at_load(make_config):
    from tritonrl.errors import ConfigError

    with pytest.raises(ConfigError, match="batch_size"):
        make_config("best_of_n.batch_size=0")


def test_a_sigterm_while_sampling_interrupts_the_stage_and_the_resume_finishes_it(sampler, make_config):
    """The whole stage: a SIGTERM during the first generate call ends the stage as interrupted with that call's
    samples saved, and ``run.resume`` samples only the other task, then fine-tunes and finishes."""
    import os
    import signal

    from tritonrl.train.best_of_n import run_best_of_n

    Generator.on_call = lambda n: os.kill(os.getpid(), signal.SIGTERM) if n == 1 else None
    overrides = ("rl.algo=best-of-n", "best_of_n.batch_size=1", "best_of_n.n=2", "best_of_n.top_k=1")
    first = run_best_of_n(make_config(*overrides), verifier=FakeVerifier(names_model_new))
    assert first.status == "interrupted" and len(Generator.calls) == 1
    round_dir = next(Path(first.run_dir).glob("best_of_n/round-0"))
    assert [len(json.loads(line)) for line in (round_dir / "samples.rank-0-of-1.partial.jsonl").read_text().splitlines()] == [2]

    Generator.calls, Generator.on_call = [], None
    second = run_best_of_n(make_config(*overrides, "run.resume=true"), verifier=FakeVerifier(names_model_new))
    assert second.status == "done" and len(Generator.calls) == 1 and Generator.calls[0] != []
    assert len(bon._load_samples(round_dir / "samples.jsonl")) == 4
    assert not list(round_dir.glob("*.partial.jsonl"))
