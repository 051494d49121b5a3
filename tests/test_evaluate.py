"""evaluate: inputs (completions JSONL, solutions dir, model specs and run manifests) and the results it writes.

The verifier and the generator are fakes here (fast, no subprocesses, no model); tests/test_golden.py runs the
real verifier end to end.
"""

import json
from pathlib import Path

import pytest

from tests.helpers.fake_verifier import FakeVerifier
from tritonrl.cli import main
from tritonrl.errors import Interrupted, UserError
from tritonrl.evaluation import evaluate
from tritonrl.tasks import get_task, select_tasks


class FakeGenerator:
    def __init__(self, texts):
        self.texts, self.prompts = texts, None

    def generate(self, prompts, k):
        self.prompts = prompts
        return [[self.texts[(i * k + j) % len(self.texts)] for j in range(k)] for i in range(len(prompts))]


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_completions_are_verified_in_one_call_and_recorded(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"task": "l1_relu", "completion": "```python\nclass ModelNew: GOOD\n```"},
        {"task": "l1_relu", "completion": "no code here"},
        {"task": "l2_swiglu", "completion": "class ModelNew: bad"},
    ])
    fake = FakeVerifier()
    report = evaluate.verify_and_report(evaluate.read_completions(path), None, tmp_path / "out", verifier=fake)
    assert fake.calls == [3]
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [(r["task"], r["level"], r["sample"]) for r in rows] == [("l1_relu", 1, 0), ("l1_relu", 1, 1),
                                                                     ("l2_swiglu", 2, 0)]
    assert rows[0]["result"]["correct"] and rows[1]["result"]["stage"] == "extract"
    assert rows[0]["code"] == "```python\nclass ModelNew: GOOD\n```" and rows[1]["completion"] == "no code here"
    assert report["correct_rate"] == pytest.approx(1 / 3) and report["format_rate"] == pytest.approx(2 / 3)
    assert (tmp_path / "out" / "report.md").is_file()


def test_task_file_paths_resolve_relative_to_the_completions_file(tmp_path):
    task_file = tmp_path / "my_task.py"
    task_file.write_text(get_task("l1_relu").source)
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "my_task.py", "completion": "x"}])
    (pending,) = evaluate.read_completions(path)
    assert pending.task.name == "my_task" and pending.completion == "x"


@pytest.mark.parametrize(("line", "message"), [
    ("{oops", r"c.jsonl:2: not valid JSON"),
    ('{"completion": "x"}', r"c.jsonl:2: need an object with a string 'task'"),
    ('{"task": "l1_no_such_task", "completion": "x"}', r"c.jsonl:2: .*l1_no_such_task"),
])
def test_malformed_completions_name_the_line(tmp_path, line, message):
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": "x"}, line])
    with pytest.raises(UserError, match=message):
        evaluate.read_completions(path)


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["eval", "--completions", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 2
    assert main(["eval", "--solutions", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tritonrl: error: completions file not found: {tmp_path / 'missing.jsonl'}",
                   f"tritonrl: error: solutions directory not found: {tmp_path / 'nope'}"]


def test_solutions_dir_uses_file_stems_as_task_names(tmp_path):
    (tmp_path / "l1_relu.py").write_text("class ModelNew: GOOD")
    (tmp_path / "l1_tanh.py").write_text("class ModelNew: broken")
    pending = evaluate.read_solutions(tmp_path)
    assert [(p.task.name, p.code, p.completion) for p in pending] == [
        ("l1_relu", "class ModelNew: GOOD", None), ("l1_tanh", "class ModelNew: broken", None)]


def test_evaluate_end_to_end_with_fakes(tmp_path):
    fake = FakeVerifier()
    gen = FakeGenerator(["class ModelNew: GOOD", "prose"])
    report = evaluate.evaluate(gen, select_tasks("l1_relu,l2_swiglu"), k=2, out_dir=tmp_path, verifier=fake)
    assert len(gen.prompts) == 2 and gen.prompts[0][-1]["role"] == "user"
    assert "l1_relu" in gen.prompts[0][-1]["content"] or "relu" in gen.prompts[0][-1]["content"].lower()
    assert report["n_samples"] == 4 and report["correct_rate"] == 0.5 and report["meta"]["k"] == 2
    assert report["pass_at_k"] == {"pass@1": 0.5, "pass@2": 1.0}


# ---------------------------------------------------------------- KernelBench clones, resume, unreadable input
KB_FIXTURE = __import__("pathlib").Path(__file__).parent / "fixtures" / "kernelbench"


def test_solutions_match_kernelbench_problems_by_number(tmp_path):
    sols = tmp_path / "sols"
    sols.mkdir()
    for stem in ("3", "level2_2", "4_ConvTranspose3d_MaxPool_Mean", "level2_2_v2"):
        (sols / f"{stem}.py").write_text(f"class ModelNew: GOOD {stem}")
    tasks = select_tasks(str(KB_FIXTURE), level=2)
    pending = evaluate.read_solutions(sols, tasks)
    assert [(p.task.name, p.index) for p in pending] == [
        ("2_Conv2d_GroupNorm_ReLU", 0), ("2_Conv2d_GroupNorm_ReLU", 1), ("3_Gemm_LayerNorm_GELU_Scale", 0),
        ("4_ConvTranspose3d_MaxPool_Mean", 0)]
    (sols / "1.py").write_text("class ModelNew: GOOD")  # problem 1 is in level 1 and in level 2
    with pytest.raises(UserError, match=r"several levels \(or pass --level\); name the file level1_1, level2_1"):
        evaluate.read_solutions(sols, select_tasks(str(KB_FIXTURE)))
    (sols / "1.py").unlink()
    (sols / "77.py").write_text("class ModelNew: GOOD")
    with pytest.raises(UserError, match="77: no problem 77"):
        evaluate.read_solutions(sols, tasks)


def test_cli_solutions_with_kernelbench_tasks(tmp_path, monkeypatch, capsys):
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "level2_3.py").write_text("class ModelNew: GOOD")
    (sols / "level2_3_wrong.py").write_text("class ModelNew: bad")
    seen, real = {}, evaluate.verify_and_report

    def fake_verify_and_report(pending, verify, out, meta=None, verifier=None, **kw):
        seen["tasks"] = [p.task.name for p in pending]
        return real(pending, verify, out, meta, verifier=FakeVerifier(), **kw)

    monkeypatch.setattr(evaluate, "verify_and_report", fake_verify_and_report)
    args = ["eval", "--solutions", str(sols), "--tasks", str(KB_FIXTURE), "--level", "2", "--out", str(tmp_path / "o")]
    assert main(args) == 0
    assert seen["tasks"] == ["3_Gemm_LayerNorm_GELU_Scale"] * 2


class InterruptingVerifier(FakeVerifier):
    """Streams results as ``verify_iter`` does, and raises KeyboardInterrupt (Ctrl-C) after ``stop_after``."""

    def __init__(self, stop_after=None):
        super().__init__()
        self.stop_after, self.judged = stop_after, []

    def verify_iter(self, items, stop=None):
        for i, item in enumerate(items):
            if self.stop_after is not None and i == self.stop_after:
                raise KeyboardInterrupt
            self.judged.append(item.completion)
            yield i, self.verify_many([item])[0]


def test_interrupted_eval_keeps_finished_samples_and_resume_does_not_redo_them(tmp_path, capsys):
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": f"class ModelNew: GOOD {i}"}
                                              for i in range(5)])
    out = tmp_path / "out"
    first = InterruptingVerifier(stop_after=3)
    with pytest.raises(Interrupted, match=f"3 of 5 samples are in {out / 'results.jsonl'}"):
        evaluate.verify_and_report(evaluate.read_completions(path), None, out, verifier=first)
    assert len((out / "results.jsonl").read_text().splitlines()) == 3
    with open(out / "results.jsonl", "a") as fh:
        fh.write('{"task": "l1_relu", "sam')  # a line cut short by a kill: that sample is judged again
    second = InterruptingVerifier()
    report = evaluate.verify_and_report(evaluate.read_completions(path), None, out, verifier=second, resume=True)
    assert second.judged == ["class ModelNew: GOOD 3", "class ModelNew: GOOD 4"]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["sample"] for r in rows] == [0, 1, 2, 3, 4] and report["n_samples"] == 5
    assert report["meta"]["resumed_rows"] == 3


def test_unreadable_solution_is_that_samples_error(tmp_path):
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "l1_relu.py").write_text("class ModelNew: GOOD")
    (sols / "l1_tanh.py").write_bytes(b"# caf\xe9\nclass ModelNew: GOOD")
    report = evaluate.verify_and_report(evaluate.read_solutions(sols), None, tmp_path / "out",
                                        verifier=FakeVerifier())
    assert report["n_samples"] == 2 and report["correct_rate"] == 0.5
    (error,) = report["errors"]
    assert error["task"] == "l1_tanh" and "not UTF-8" in error["error"]
    assert "not UTF-8" in (tmp_path / "out" / "report.md").read_text()


def test_non_utf8_completions_file_is_one_line_exit_2(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"task": "l1_relu", "completion": "caf\xe9"}\n')
    assert main(["eval", "--completions", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tritonrl: error: {path}: not UTF-8 text (byte 0xe9 at offset 38); JSONL files must be UTF-8"]


def test_eval_flags_are_config_fields(tmp_path, capsys):
    import argparse

    from tritonrl.cli import evaluate as cli_eval

    parser = argparse.ArgumentParser()
    cli_eval.register(parser.add_subparsers())
    args = parser.parse_args(["eval", "--model", "m", "--out", "o", "--k", "3", "--device", "cpu", "--timeout", "5",
                              "--refine-for-speed"])
    gen, verify = cli_eval.configs_from_args(args)
    assert (gen.k, gen.device, gen.refine_for_speed, verify.device, verify.timeout_s) == (3, "cpu", True, "cpu", 5.0)
    assert main(["eval", "--model", "m", "--out", str(tmp_path), "--k", "0"]) == 2  # checked as the config is
    assert "eval.k" in capsys.readouterr().err


def test_eval_prompt_template_reaches_the_model(tmp_path):
    """``eval.prompt_template`` is a file path; evaluation loads it (once) and every prompt uses it."""
    template = tmp_path / "template.yaml"
    template.write_text("system: You write Triton. TEMPLATE-MARK\nuser: 'Kernel for:\n{task_source}'\n"
                        "include_example: false\n")
    gen = FakeGenerator(["class ModelNew: GOOD"])
    config = evaluate.EvalConfig(prompt_template=str(template))
    evaluate.evaluate(gen, select_tasks("l1_relu"), k=1, out_dir=tmp_path / "out", gen=config,
                      verifier=FakeVerifier())
    system, user = gen.prompts[0][0], gen.prompts[0][-1]
    assert system["role"] == "system" and "TEMPLATE-MARK" in system["content"]
    assert user["content"].startswith("Kernel for:") and "class Model" in user["content"]


def test_cli_tasks_naming_a_missing_folder_says_so(tmp_path, capsys):
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "12.py").write_text("class ModelNew: GOOD")
    missing = tmp_path / "KernelBench"
    assert main(["eval", "--solutions", str(sols), "--tasks", str(missing), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"tritonrl: error: no such directory or task file: {missing} (tasks are 'bundled', a KernelBench directory, "
        "a .py task file, or task names separated by commas)"]


def test_cli_ctrl_c_in_eval_says_interrupted_once(tmp_path, monkeypatch, capsys):
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": f"class ModelNew: GOOD {i}"}
                                              for i in range(5)])
    real = evaluate.verify_and_report

    def interrupted_after_3(pending, verify, out, meta=None, verifier=None, **kw):
        return real(pending, verify, out, meta, verifier=InterruptingVerifier(stop_after=3), **kw)

    monkeypatch.setattr(evaluate, "verify_and_report", interrupted_after_3)
    out = tmp_path / "out"
    assert main(["eval", "--completions", str(path), "--out", str(out)]) == 130
    assert capsys.readouterr().err.strip().splitlines() == [
        f"tritonrl: interrupted: 3 of 5 samples are in {out / 'results.jsonl'}; the same command with --resume "
        "judges only the rest"]


def test_cli_refuses_an_out_dir_holding_results_without_resume_or_overwrite(tmp_path, monkeypatch, capsys):
    """A second run into the same --out once replaced 6 rows with 1, silently."""
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=FakeVerifier(), **kw))
    six = write_jsonl(tmp_path / "six.jsonl", [{"task": "l1_relu", "completion": "class ModelNew: GOOD"}] * 6)
    one = write_jsonl(tmp_path / "one.jsonl", [{"task": "l1_relu", "completion": "class ModelNew: GOOD"}])
    out = tmp_path / "out"
    assert main(["eval", "--completions", str(six), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["eval", "--completions", str(one), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"tritonrl: error: --out {out} holds a finished eval (6 results in results.jsonl); add --overwrite to "
        "replace it, or give another directory"]
    assert len((out / "results.jsonl").read_text().splitlines()) == 6  # untouched
    assert main(["eval", "--completions", str(six), "--out", str(out), "--resume"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 6
    assert main(["eval", "--completions", str(one), "--out", str(out), "--overwrite"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 1
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert main(["eval", "--completions", str(one), "--out", str(tmp_path / "other")]) == 2
    assert "holds other files (notes.txt); give another directory" in capsys.readouterr().err
    assert main(["eval", "--completions", str(one), "--out", str(tmp_path / "empty_is_fine")]) == 0


# ---------------------------------------------------------------- verifier errors: no verdict, judged again
def flaky_then_fine(text):
    """A verifier that fails itself on the first look at a FLAKY candidate (as the AST race did), then judges it."""
    from tritonrl.verify.shared.verdict import Stage, VerifyResult

    if "FLAKY" in text and not flaky_then_fine.seen.setdefault(text, False):
        flaky_then_fine.seen[text] = True
        return VerifyResult(Stage.COMPILE, flags=["verifier_error"],
                            error="verifier error (SystemError): AST constructor recursion depth mismatch")
    from tests.helpers.fake_verifier import good_or_broken

    return good_or_broken(text)


def test_verifier_errors_are_counted_apart_left_out_of_rates_and_judged_again_on_resume(tmp_path, monkeypatch,
                                                                                      capsys):
    flaky_then_fine.seen = {}
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=FakeVerifier(flaky_then_fine), **kw))
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "l1_relu.py").write_text("class ModelNew: GOOD FLAKY")
    (sols / "l2_swiglu.py").write_text("class ModelNew: broken")
    (sols / "l1_tanh.py").write_text("class ModelNew: GOOD")
    out = tmp_path / "out"
    assert main(["eval", "--solutions", str(sols), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 samples, 2 tasks: format 100.0%, valid 100.0%, compiled 50.0%, correct 50.0%" in printed
    assert "1 verifier errors (the verifier failed, not the kernel): left out of the rates; the same command " \
           "with --resume judges them again" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["n_samples"] == 2 and report["n_verifier_errors"] == 1
    assert [(e["task"], e["file"]) for e in report["verifier_errors"]] == [("l1_relu", str(sols / "l1_relu.py"))]
    assert all("verifier_error" not in e["flags"] for e in report["errors"])
    assert "**1 verifier errors**" in (out / "report.md").read_text()
    assert main(["eval", "--solutions", str(sols), "--out", str(out), "--resume"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert (report["n_samples"], report["n_verifier_errors"], report["correct_rate"]) == (3, 0, 2 / 3)
    assert report["meta"]["resumed_rows"] == 2


def test_resume_of_a_model_run_judges_a_verifier_errors_completion_again_as_it_was(tmp_path):
    flaky_then_fine.seen = {}
    out = tmp_path / "out"
    first = FakeGenerator(["class ModelNew: GOOD FLAKY", "class ModelNew: broken"])
    report = evaluate.evaluate(first, select_tasks("l1_relu"), k=2, out_dir=out, verifier=FakeVerifier(flaky_then_fine))
    assert report["n_verifier_errors"] == 1 and report["n_samples"] == 1
    second = FakeGenerator(["class ModelNew: other"])
    report = evaluate.evaluate(second, select_tasks("l1_relu"), k=2, out_dir=out, resume=True,
                               verifier=FakeVerifier(flaky_then_fine))
    assert second.prompts is None  # nothing sampled anew
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["completion"] for r in rows] == ["class ModelNew: GOOD FLAKY", "class ModelNew: broken"]
    assert (report["n_samples"], report["n_verifier_errors"], report["correct_rate"]) == (2, 0, 0.5)


def test_resume_with_other_sampling_is_refused_in_one_line_and_the_same_is_accepted(tmp_path):
    """Judged rows and kept completions of an earlier run must not stand beside samples of another model or
    temperature: a resume that changes either is a UserError naming what changed; the same settings resume."""
    from tritonrl.config import EvalConfig
    from tritonrl.errors import UserError

    out = tmp_path / "out"
    evaluate.evaluate("runs/model-a", [], k=1, gen=EvalConfig(temperature=1.0), out_dir=out)
    assert json.loads((out / "sampling.json").read_text())["model"] == "runs/model-a"
    with pytest.raises(UserError, match=r"temperature 1.0 -> 0.5.*a new --out"):
        evaluate.evaluate("runs/model-a", [], k=1, gen=EvalConfig(temperature=0.5), out_dir=out, resume=True)
    with pytest.raises(UserError, match=r"model 'runs/model-a' -> 'runs/model-b'"):
        evaluate.evaluate("runs/model-b", [], k=1, gen=EvalConfig(temperature=1.0), out_dir=out, resume=True)
    evaluate.evaluate("runs/model-a", [], k=1, gen=EvalConfig(temperature=1.0), out_dir=out, resume=True)
    evaluate.evaluate("runs/model-b", [], k=1, gen=EvalConfig(temperature=0.5), out_dir=out)  # no resume: a new run


def test_rows_and_reports_name_the_solution_file(tmp_path):
    sols = tmp_path / "sols"
    sols.mkdir()
    for stem, text in (("level2_3", "GOOD"), ("level2_3_wrong", "broken"), ("4_mine", "broken")):
        (sols / f"{stem}.py").write_text(f"class ModelNew: {text}")
    out = tmp_path / "out"
    report = evaluate.evaluate_solutions(sols, out_dir=out, tasks=select_tasks(str(KB_FIXTURE), level=2),
                                         verifier=FakeVerifier())
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task"][:2], r["sample"], r["file"]) for r in rows] == [
        ("3_", 0, str(sols / "level2_3.py")), ("3_", 1, str(sols / "level2_3_wrong.py")),
        ("4_", 0, str(sols / "4_mine.py"))]
    assert [e["file"] for e in report["errors"]] == [str(sols / "level2_3_wrong.py"), str(sols / "4_mine.py")]
    assert [(f["file"], f["verdict"]) for f in report["files"]] == [
        (str(sols / "level2_3.py"), "correct"), (str(sols / "level2_3_wrong.py"), "failed at compile"),
        (str(sols / "4_mine.py"), "failed at compile")]
    md = (out / "report.md").read_text()
    assert f"| {sols / 'level2_3.py'} | 3_Gemm_LayerNorm_GELU_Scale | 0 | correct |" in md
    assert f"| 3_Gemm_LayerNorm_GELU_Scale | 1 | {sols / 'level2_3_wrong.py'} | compile |" in md


# ---------------------------------------------------------------- messages that say what happened
def kernelbench_layout(tmp_path, problems=((1, 23), (1, 47), (2, 9), (2, 40), (2, 86))):
    """A KernelBench-layout folder (levelN/NUMBER_Name.py) of copies of one small fixture task."""
    source = (KB_FIXTURE / "level1" / "2_Sum_over_dim.py").read_text()
    for level, number in problems:
        (tmp_path / "kb" / f"level{level}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "kb" / f"level{level}" / f"{number}_Problem{number}.py").write_text(source)
    return tmp_path / "kb"


def test_cli_level_selects_the_files_of_its_level_from_a_mixed_directory(tmp_path, monkeypatch, capsys):
    clone = kernelbench_layout(tmp_path, problems=((1, 23), (1, 47), (2, 9), (2, 40), (2, 86)))
    (clone / "level2" / "23_Second.py").write_text((clone / "level2" / "9_Problem9.py").read_text())
    sols = tmp_path / "sols"
    sols.mkdir()
    for stem in ("level1_23", "level1_47", "level2_9", "23_mine", "40", "86_Problem86"):
        (sols / f"{stem}.py").write_text("class ModelNew: GOOD")
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=FakeVerifier(), **kw))
    out = tmp_path / "out"
    assert main(["eval", "--solutions", str(sols), "--tasks", str(clone), "--level", "2", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert [(Path(f["file"]).name, f["task"]) for f in report["files"]] == [  # a bare 23 is taken at --level 2
        ("level2_9.py", "9_Problem9"), ("23_mine.py", "23_Second"), ("40.py", "40_Problem40"),
        ("86_Problem86.py", "86_Problem86")]
    printed = capsys.readouterr().out
    assert "left out by --level: 2 files of other levels than 2: level1_23.py, level1_47.py\n" in printed
    assert main(["eval", "--solutions", str(sols), "--tasks", str(clone), "--level", "3", "--out",
                 str(tmp_path / "o3")]) == 2
    assert capsys.readouterr().err.strip() == ("tritonrl: error: 23_mine: problem 23 is in several levels, none at "
                                               "level 3; name the file level1_23, level2_23")
    (sols / "23_mine.py").unlink()
    assert main(["eval", "--solutions", str(sols), "--tasks", str(clone), "--level", "3", "--out",
                 str(tmp_path / "o3")]) == 2
    assert capsys.readouterr().err.strip() == f"tritonrl: error: no solution file of level 3 in {sols} (5 of other levels)"
    assert main(["eval", "--solutions", str(sols), "--tasks", str(clone), "--out", str(tmp_path / "all")]) == 0
    report = json.loads((tmp_path / "all" / "report.json").read_text())
    assert [(Path(f["file"]).name, f["task"]) for f in report["files"]] == [
        ("level1_23.py", "23_Problem23"), ("level1_47.py", "47_Problem47"), ("level2_9.py", "9_Problem9"),
        ("40.py", "40_Problem40"), ("86_Problem86.py", "86_Problem86")]


def test_empty_solution_file_is_its_samples_error_saying_so(tmp_path, monkeypatch, capsys):
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "l1_relu.py").write_text("\n  \n")
    out = tmp_path / "out"
    report = evaluate.evaluate_solutions(sols, out_dir=out, verifier=FakeVerifier())
    (error,) = report["errors"]
    assert (error["category"], error["error"]) == ("extract", f"{sols / 'l1_relu.py'} is empty: no code to judge")
    assert main(["verify", "--task", "l1_relu", "--solution", str(sols / "l1_relu.py"), "--device", "cpu"]) == 1
    assert f"{sols / 'l1_relu.py'} is empty: no code to judge" in capsys.readouterr().out


def test_shared_verdicts_judge_each_distinct_code_of_a_task_once(tmp_path):
    """``verify.share_verdicts``: repeated code of one task is judged once and every copy gets its verdict (rows
    say so); the same code for another task, and other code, are judged on their own; off, every sample is."""
    from tritonrl.config import VerifyConfig

    same = "```python\nclass ModelNew: GOOD\n```"
    rows_in = [{"task": "l1_relu", "completion": same}, {"task": "l1_relu", "completion": "no code here"},
               {"task": "l1_relu", "completion": same}, {"task": "l2_swiglu", "completion": same},
               {"task": "l1_relu", "completion": "class ModelNew: bad"}, {"task": "l1_relu", "completion": same}]
    path = write_jsonl(tmp_path / "c.jsonl", rows_in)
    for share, judged in ((True, 4), (False, 6)):
        fake = FakeVerifier()
        out = tmp_path / f"out-{share}"
        report = evaluate.verify_and_report(evaluate.read_completions(path), VerifyConfig(share_verdicts=share), out,
                                            verifier=fake)
        assert sum(fake.calls) == judged
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        assert [r["sample"] for r in rows] == [0, 1, 2, 0, 3, 4]  # every sample has its row, in order
        assert [bool(r.get("shared_verdict")) for r in rows] == [False, False, share, False, False, share]
        assert report["correct_rate"] == pytest.approx(4 / 6)
