"""SIGTERM/SIGINT in evaluation: it stops at the next safe point (after the generate call or the verdict under way),
what it finished is on disk (``completions.jsonl``, ``results.jsonl``), it says it did not finish (``Stopped``; the
CLI exits 143; the pipeline's eval stage is ``interrupted`` and raises ``StageNotFinished``), and a rerun finishes
with the results and report an uninterrupted run gives.

The signal is sent to this process from inside a fake generator or verifier (``signal.raise_signal``), after a
check that our handler is the one installed (else the default action would end the test run)."""

import json
import signal
import zlib

import pytest

from tests.helpers.fake_verifier import FakeVerifier
from tests.test_evaluate import write_jsonl
from tritonrl.cli import main
from tritonrl.common.manifest import RunManifest
from tritonrl.config import EvalConfig, PipelineConfig, load_config
from tritonrl.errors import Interrupted, Stopped
from tritonrl.evaluation import evaluate
from tritonrl.tasks import select_tasks

TASKS = "l1_relu,l1_gelu,l1_hardtanh,l1_leaky_relu,l1_add_scale"  # 5 tasks: 3 generate calls of 2 prompts


def send(signum: int) -> None:
    """The signal to this process, once a handler of ours (a Python function, not the default) is installed."""
    handler = signal.getsignal(signum)
    assert callable(handler) and handler is not signal.default_int_handler, f"no handler of ours for {signum}"
    signal.raise_signal(signum)


class SeededGenerator:
    """Completions that depend on the prompt alone, as a seeded model's do; ``signal`` sent during call ``at``."""

    def __init__(self, at: int | None = None, signum: int = signal.SIGTERM):
        self.at, self.signum, self.calls = at, signum, []

    def generate(self, prompts, k):
        self.calls.append(len(prompts))
        if len(self.calls) == self.at:
            send(self.signum)  # the call still returns: its completions are saved
        out = []
        for messages in prompts:
            seed = zlib.crc32(json.dumps(messages).encode())
            out.append([f"```python\nclass ModelNew: {'GOOD' if self.good(messages, seed + j) else 'bad'} "
                        f"{seed % 997} {j}\n```" for j in range(k)])
        return out

    def good(self, messages, seed: int) -> bool:
        return seed % 3 != 0


class SecondTurnGood(SeededGenerator):
    """Refinement: every first attempt fails, every second one is correct."""

    def good(self, messages, seed: int) -> bool:
        return any(m["role"] == "assistant" for m in messages)


class SignallingVerifier(FakeVerifier):
    """Streams verdicts (``verify_iter``); sends ``signum`` just before giving verdict number ``at`` (0-based)."""

    def __init__(self, at: int | None = None, signum: int = signal.SIGTERM):
        super().__init__()
        self.at, self.signum, self.judged, self.closed = at, signum, [], False

    def verify_iter(self, items, stop=None):
        for i, item in enumerate(items):
            if stop is not None and stop.is_set():  # one at a time: none is under way, the stream has drained
                return
            self.judged.append(item.completion)
            if i == self.at:
                send(self.signum)
            yield i, self.verify_many([item])[0]

    def close(self):
        self.closed = True


def lines(path):
    return path.read_text().splitlines()


def run(out, generator, verifier, resume=False):
    return evaluate.evaluate(generator, select_tasks(TASKS), k=2, gen=EvalConfig(batch_size=2), out_dir=out,
                             verifier=verifier, resume=resume)


@pytest.fixture
def uninterrupted(tmp_path):
    out = tmp_path / "whole"
    report = run(out, SeededGenerator(), SignallingVerifier())
    return out, report


def same_report(report, reference):
    """Everything but the resumed run's note of how many rows it found."""
    strip = lambda r: {**r, "meta": {k: v for k, v in r["meta"].items() if k != "resumed_rows"}}  # noqa: E731
    return strip(report) == strip(reference)


def test_sigterm_while_sampling_keeps_the_finished_calls_and_a_rerun_samples_only_the_rest(tmp_path, uninterrupted):
    whole, reference = uninterrupted
    out = tmp_path / "out"
    first, verifier = SeededGenerator(at=2), SignallingVerifier()
    with pytest.raises(Stopped, match=r"eval: stopped by SIGTERM after sampling 4/5 prompts \(completions in .*"
                                      r"completions.jsonl\); run again to resume"):
        run(out, first, verifier)
    assert first.calls == [2, 2] and verifier.judged == []  # stopped after the call under way, nothing judged
    assert len(lines(out / "completions.jsonl")) == 8 and not (out / "results.jsonl").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handlers are gone again

    second, verifier = SeededGenerator(), SignallingVerifier()
    report = run(out, second, verifier, resume=True)
    assert second.calls == [1] and len(verifier.judged) == 10  # only the last call is made
    assert lines(out / "completions.jsonl") == lines(whole / "completions.jsonl")
    assert lines(out / "results.jsonl") == lines(whole / "results.jsonl")
    assert report == reference  # nothing was judged before: not even resumed_rows differs


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_verifying_keeps_the_verdicts_and_a_rerun_judges_only_the_rest(tmp_path, uninterrupted, signum):
    whole, reference = uninterrupted
    out = tmp_path / "out"
    first = SignallingVerifier(at=3, signum=signum)
    name = signal.Signals(signum).name
    with pytest.raises(Stopped, match=f"eval: stopped by {name} after 4/10 samples verified"):
        run(out, SeededGenerator(), first)
    assert len(first.judged) == 4 and len(lines(out / "results.jsonl")) == 4  # the verdict under way is kept
    assert lines(out / "completions.jsonl") == lines(whole / "completions.jsonl")  # every completion was saved
    assert json.loads((out / "report.json").read_text())["meta"]["interrupted"] is True

    generator, second = SeededGenerator(), SignallingVerifier()
    report = run(out, generator, second, resume=True)
    assert generator.calls == [] and len(second.judged) == 6  # nothing sampled again, the 4 verdicts stand
    assert lines(out / "results.jsonl") == lines(whole / "results.jsonl")
    assert report["meta"]["resumed_rows"] == 4 and same_report(report, reference)


def test_a_second_ctrl_c_stops_at_once(tmp_path):
    class TwiceInterrupting(SignallingVerifier):
        def verify_iter(self, items, stop=None):
            for i, pair in enumerate(super().verify_iter(items, stop)):
                if i == 2:
                    send(signal.SIGINT)  # the first: stop after this verdict
                    send(signal.SIGINT)  # the second, while it is awaited: KeyboardInterrupt at once
                yield pair

    out = tmp_path / "out"
    with pytest.raises(Interrupted, match="interrupted: 2 of 10 samples are in"):
        run(out, SeededGenerator(), TwiceInterrupting())
    assert len(lines(out / "results.jsonl")) == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_line_cut_short_by_a_kill_is_sampled_again(tmp_path, uninterrupted):
    whole, _ = uninterrupted
    out = tmp_path / "out"
    with pytest.raises(Stopped):
        run(out, SeededGenerator(at=1), SignallingVerifier())
    with open(out / "completions.jsonl", "a") as fh:
        fh.write('{"task": "l1_hardtanh", "sam')  # the second call's first row, cut short
    again = SeededGenerator()
    run(out, again, SignallingVerifier(), resume=True)
    assert again.calls == [2, 1]
    assert lines(out / "results.jsonl") == lines(whole / "results.jsonl")


def test_cli_eval_stopped_by_sigterm_exits_143_and_resumes(tmp_path, monkeypatch, capsys):
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": f"class ModelNew: GOOD {i}"}
                                              for i in range(5)])
    out = tmp_path / "out"
    verifiers = iter([SignallingVerifier(at=2), SignallingVerifier()])
    real = evaluate.verify_and_report

    def with_fake(pending, verify, out_dir, meta=None, **kw):
        return real(pending, verify, out_dir, meta, **{**kw, "verifier": next(verifiers)})

    monkeypatch.setattr(evaluate, "verify_and_report", with_fake)
    assert main(["eval", "--completions", str(path), "--out", str(out)]) == 143
    assert capsys.readouterr().err == (f"tritonrl: eval: stopped by SIGTERM after 3/5 samples verified (in "
                                       f"{out / 'results.jsonl'}); the same command with --resume continues\n")
    assert main(["eval", "--completions", str(path), "--out", str(out), "--resume"]) == 0
    assert [json.loads(line)["sample"] for line in lines(out / "results.jsonl")] == [0, 1, 2, 3, 4]


def test_refinement_stopped_while_sampling_a_turn_resumes_with_the_saved_attempts(tmp_path):
    def refine(out, generator, resume=False):
        return evaluate.evaluate(generator, select_tasks("l1_relu,l1_gelu,l1_hardtanh"), k=1,
                                 gen=EvalConfig(turns=3, batch_size=2), out_dir=out, verifier=FakeVerifier(),
                                 resume=resume)

    whole = SecondTurnGood()
    reference = refine(tmp_path / "whole", whole)
    assert whole.calls == [2, 1, 2, 1]  # turns 1 and 2, two calls each; turn 3 never due
    out = tmp_path / "out"
    first = SecondTurnGood(at=3)  # turn 2's first call
    with pytest.raises(Stopped, match=r"eval: stopped by SIGTERM while sampling turn 2 \(completions in .*\); "
                                      r"3 attempts are in .*results.jsonl; run again to resume"):
        refine(out, first)
    assert first.calls == [2, 1, 2] and len(lines(out / "completions.jsonl")) == 5
    second = SecondTurnGood()
    report = refine(out, second, resume=True)
    assert second.calls == [1]  # only turn 2's second call
    assert lines(out / "results.jsonl") == lines(tmp_path / "whole" / "results.jsonl")
    assert lines(out / "completions.jsonl")[:5] == lines(tmp_path / "whole" / "completions.jsonl")[:5]
    assert same_report(report, reference)


# ---------------------------------------------------------------- the pipeline's eval stage
def test_pipeline_eval_stage_stopped_is_interrupted_and_resumes_on_rerun(tmp_path, monkeypatch):
    import torch

    from tritonrl import pipeline

    threads = torch.get_num_threads()
    loaded = []
    verifiers = iter([SignallingVerifier(), SignallingVerifier(at=5), SignallingVerifier()])
    monkeypatch.setattr(evaluate, "load_generator", lambda spec, gen: loaded.append(spec) or SeededGenerator())
    monkeypatch.setattr("tritonrl.verify.parent.backends.make_verifier", lambda verify: next(verifiers))

    def config(run_dir):
        return load_config(None, [f"run.run_dir={run_dir}", "model.name_or_path=fake/base", "pipeline.stages=[eval]",
                                  "pipeline.eval_models=[base]", f"eval.tasks={TASKS}", "eval.k=2",
                                  "eval.batch_size=2", "verify.known_good=false"],  # a fake verifier: nothing
                           schema=PipelineConfig)                                   # to check of this stack

    try:
        pipeline.run_pipeline(config(tmp_path / "whole"), log=lambda _: None)
        with pytest.raises(pipeline.StageNotFinished, match="stage eval_base stopped: eval: stopped by SIGTERM after "
                                                            "6/10 samples verified .*; run the same command again"):
            pipeline.run_pipeline(config(tmp_path / "run"), log=lambda _: None)
        entry = RunManifest(tmp_path / "run").stage("eval_base")
        assert entry["status"] == "interrupted" and entry["reason"] == "SIGTERM"
        assert len(lines(tmp_path / "run" / "eval" / "base" / "results.jsonl")) == 6
        log = []
        pipeline.run_pipeline(config(tmp_path / "run"), log=log.append)
    finally:
        torch.set_num_threads(threads)
    assert loaded == ["fake/base"] * 2  # the rerun sampled nothing: it did not even load the model
    assert RunManifest(tmp_path / "run").stage("eval_base")["status"] == "done"
    whole, run_ = (tmp_path / d / "eval" / "base" for d in ("whole", "run"))
    assert lines(run_ / "results.jsonl") == lines(whole / "results.jsonl")
    reports = [json.loads((d / "report.json").read_text()) for d in (run_, whole)]
    assert reports[0]["meta"]["resumed_rows"] == 6 and same_report(*reports)


def test_a_seeded_transformers_model_resumed_gives_the_uninterrupted_completions(tmp_path):
    """Each generate call is seeded (``HFGenerator``), so sampling at temperature 1 resumes to the same texts."""
    pytest.importorskip("transformers")
    from tritonrl.common.generation import HFGenerator, Sampling
    from tritonrl.common.llm import build_tiny_model, load_model
    from tritonrl.config import ModelConfig

    model, tokenizer = load_model(ModelConfig(name_or_path=str(build_tiny_model(tmp_path / "tiny")), dtype="float32"))
    sampling = Sampling(temperature=1.0, max_new_tokens=6, seed=0, batch_size=2)

    class Signalling(HFGenerator):
        at, calls = None, 0

        def generate(self, prompts, k):
            type(self).calls += 1
            if type(self).calls == self.at:
                send(signal.SIGTERM)
            return super().generate(prompts, k)

    def sample(out, at=None, resume=False):
        Signalling.at, Signalling.calls = at, 0
        return evaluate.evaluate(Signalling(model, tokenizer, sampling), select_tasks("l1_relu,l1_gelu,l1_tanh"),
                                 k=2, gen=EvalConfig(batch_size=2, temperature=1.0), out_dir=out,
                                 verifier=FakeVerifier(), resume=resume)

    reference = sample(tmp_path / "whole")
    with pytest.raises(Stopped, match="after sampling 2/3 prompts"):
        sample(tmp_path / "out", at=1)
    report = sample(tmp_path / "out", resume=True)
    assert Signalling.calls == 1  # the second call only
    texts = [json.loads(line)["completion"] for line in lines(tmp_path / "out" / "completions.jsonl")]
    assert len(set(texts)) > 1 and lines(tmp_path / "out" / "completions.jsonl") == \
        lines(tmp_path / "whole" / "completions.jsonl")
    assert lines(tmp_path / "out" / "results.jsonl") == lines(tmp_path / "whole" / "results.jsonl")
    assert report == reference


def test_cli_eval_stopped_by_ctrl_c_exits_130(tmp_path, monkeypatch, capsys):
    """The first Ctrl-C stops at the same safe point as SIGTERM, and the command exits 130 (SIGINT's status, as a
    shell reports Ctrl-C), not SIGTERM's 143."""
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": f"class ModelNew: GOOD {i}"}
                                              for i in range(3)])
    real = evaluate.verify_and_report

    def with_fake(pending, verify, out_dir, meta=None, **kw):
        return real(pending, verify, out_dir, meta, **{**kw, "verifier": SignallingVerifier(at=0, signum=signal.SIGINT)})

    monkeypatch.setattr(evaluate, "verify_and_report", with_fake)
    assert main(["eval", "--completions", str(path), "--out", str(tmp_path / "out")]) == 130
    assert "stopped by SIGINT after 1/3 samples verified" in capsys.readouterr().err
