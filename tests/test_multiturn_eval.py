"""Refinement turns in evaluation: early stopping, what the next prompt carries, per-turn metrics, replaying a
completions file with turns, resume, and the golden completions through the real verifier."""

import json
from pathlib import Path

import pytest

from tests.helpers.fake_verifier import FakeVerifier
from tests.test_evaluate import write_jsonl
from tritonrl.cli import main
from tritonrl.config import EvalConfig
from tritonrl.errors import Interrupted, UserError
from tritonrl.evaluation import evaluate
from tritonrl.tasks import select_tasks

GOLDEN = Path(__file__).parents[1] / "examples" / "golden" / "completions"


class Scripted:
    """Answers ``script[n]`` when the prompt holds n earlier attempts; records every prompt."""

    def __init__(self, *script, interrupt_at_turn=None):
        self.script, self.prompts, self.interrupt_at_turn = script, [], interrupt_at_turn

    def generate(self, prompts, k):
        assert k == 1
        turn = 1 + sum(m["role"] == "assistant" for m in prompts[0])
        if turn == self.interrupt_at_turn:
            raise KeyboardInterrupt
        self.prompts.append(prompts)
        return [[self.script[min(turn - 1, len(self.script) - 1)]] for _ in prompts]


def run(tmp_path, generator, turns=3, k=2, **kw):
    gen = EvalConfig(turns=turns, refine_for_speed=kw.pop("refine_for_speed", False))
    return evaluate.evaluate(generator, select_tasks("l1_relu,l2_swiglu"), k=k, gen=gen,
                             out_dir=tmp_path, verifier=FakeVerifier(), **kw)


def rows(out):
    return [json.loads(line) for line in (Path(out) / "results.jsonl").read_text().splitlines()]


def test_failed_attempts_get_feedback_and_trajectories_stop_when_correct(tmp_path):
    gen = Scripted("class ModelNew: v1", "class ModelNew: GOOD")
    report = run(tmp_path, gen)
    assert [len(p) for p in gen.prompts] == [4, 4]  # turn 3 never asked: every trajectory was correct at turn 2
    second = gen.prompts[1][0]
    assert second[-2] == {"role": "assistant", "content": "```python\nclass ModelNew: v1\n```"}
    assert second[-1]["content"].startswith("Feedback on attempt 1:\nYour previous answer failed at the compile "
                                            "stage") and "- import_error" in second[-1]["content"]
    got = rows(tmp_path)
    assert [(r["task"], r["sample"], r["turn"]) for r in got][:4] == [
        ("l1_relu", 0, 1), ("l1_relu", 0, 2), ("l1_relu", 1, 1), ("l1_relu", 1, 2)]
    assert got[1]["prompt_context"]["attempts"] == 1 and "prompt_context" not in got[0]
    per_turn = report["turns"]["per_turn"]
    assert [(t["turn"], t["attempts"], t["correct"]) for t in per_turn] == [(1, 4, 0.0), (2, 4, 1.0), (3, 0, 1.0)]
    assert [t["speedup"] for t in per_turn] == [None] * 3 and per_turn[2]["fast_p"]["fast_1"] is None
    assert report["correct_rate"] == 0.0 and report["n_samples"] == 4  # the headline: first attempts
    md = (tmp_path / "report.md").read_text()
    assert "## Refinement turns" in md and "| 2 | 4 | 100.0% |" in md and (tmp_path / "turns.png").is_file()
    # rebuilt from results.jsonl alone: up to the last turn judged (the run's --turns is not in the rows)
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "re")]) == 0
    rebuilt = json.loads((tmp_path / "re" / "report.json").read_text())["turns"]["per_turn"]
    assert [t["correct"] for t in rebuilt] == [0.0, 1.0]
    assert main(["compare", str(tmp_path), "--out", str(tmp_path / "cmp")]) == 0
    assert "correct@3" in (tmp_path / "cmp" / "comparison.md").read_text()


def test_refine_for_speed_keeps_correct_trajectories_going(tmp_path):
    gen = Scripted("class ModelNew: GOOD")
    report = run(tmp_path, gen, turns=2, k=1, refine_for_speed=True)
    assert [t["attempts"] for t in report["turns"]["per_turn"]] == [2, 2]
    assert gen.prompts[1][0][-1]["content"].startswith("Feedback on attempt 1:\nYour kernel is correct.")


def test_interrupted_refinement_resumes_from_the_last_judged_turn(tmp_path, capsys):
    script = ("class ModelNew: v1", "class ModelNew: GOOD")
    with pytest.raises(Interrupted, match="--resume continues"):
        run(tmp_path, Scripted(*script, interrupt_at_turn=2))
    assert {r["turn"] for r in rows(tmp_path)} == {1}
    gen = Scripted(*script)
    report = run(tmp_path, gen, resume=True)
    assert [len(p) for p in gen.prompts] == [4]  # only turn 2 generated again
    assert [t["correct"] for t in report["turns"]["per_turn"]] == [0.0, 1.0, 1.0]


def test_single_attempt_completions_with_turns_is_one_line_exit_2(tmp_path, capsys):
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": "x"}])
    with pytest.raises(UserError, match="one attempt per sample"):
        evaluate.evaluate_completions(path, out_dir=tmp_path / "o", turns=3)
    assert main(["eval", "--completions", str(path), "--turns", "3", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "needs a model" in err


def test_replayed_turns_after_a_correct_attempt_are_not_judged(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [
        {"task": "l1_relu", "sample": 0, "turn": 1, "completion": "class ModelNew: GOOD"},
        {"task": "l1_relu", "sample": 0, "turn": 2, "completion": "class ModelNew: v2"},
        {"task": "l1_relu", "sample": 1, "turn": 1, "completion": "class ModelNew: v1"},
        {"task": "l1_relu", "sample": 1, "turn": 2, "completion": "class ModelNew: GOOD"},
    ])
    report = evaluate.evaluate_completions(path, out_dir=tmp_path / "o", verifier=FakeVerifier())
    assert [(r["sample"], r["turn"]) for r in rows(tmp_path / "o")] == [(0, 1), (1, 1), (1, 2)]
    assert [t["correct"] for t in report["turns"]["per_turn"]] == [0.5, 1.0]
    bad = write_jsonl(tmp_path / "b.jsonl", [{"task": "l1_relu", "turn": 2, "completion": "x"}])
    with pytest.raises(UserError, match=r"has turns \[2\]; need 1..n"):
        evaluate.read_completions(bad)


def test_golden_trajectories_through_the_cli_and_real_verifier(tmp_path, capsys):
    """l1_sigmoid: wrong math, then correct; l1_relu: correct at once (its prose-only turn 2 is never judged)."""
    def golden(name):
        return (GOLDEN / name).read_text()

    path = write_jsonl(tmp_path / "turns.jsonl", [
        {"task": "l1_sigmoid", "turn": 1, "completion": golden("06_l1_sigmoid__wrong_math.md")},
        {"task": "l1_sigmoid", "turn": 2, "completion": golden("05_l1_sigmoid__correct.md")},
        {"task": "l1_relu", "turn": 1, "completion": golden("01_l1_relu__correct.md")},
        {"task": "l1_relu", "turn": 2, "completion": golden("04_l1_relu__prose_only.md")},
    ])
    out = tmp_path / "out"
    assert main(["eval", "--completions", str(path), "--device", "cpu", "--timeout", "30", "--workers", "2",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "turn 1: 2 attempts; correct@1 50.0%, fast_1@1 null, speedup@1 null (not timed)" in printed
    assert "turn 2: 1 attempts; correct@2 100.0%" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["errors"][0]["turn"] == 1 and report["errors"][0]["category"] == "tiny"
    assert "| 2 | 1 | 100.0% |" in (out / "report.md").read_text()


EXAMPLE = Path(__file__).parents[1] / "examples" / "turns"


def test_the_two_turn_example_is_built_from_its_completions_and_replays_as_documented(tmp_path, capsys):
    """examples/turns/: each trajectory fails at turn 1 and answers the feedback at turn 2."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_turns", EXAMPLE / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert (EXAMPLE / "completions.jsonl").read_text() == build.build()
    out = tmp_path / "turns"  # the command in README.md and the build script's docstring
    assert main(["eval", "--completions", str(EXAMPLE / "completions.jsonl"), "--timeout", "20",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "turn 1: 2 attempts; correct@1 0.0%" in printed and "turn 2: 2 attempts; correct@2 100.0%" in printed
    failed = {(e["task"], e["category"]) for e in json.loads((out / "report.json").read_text())["errors"]}
    assert failed == {("l1_relu", "static"), ("l1_sigmoid", "tiny")}
