"""What ``tritonrl eval`` prints: each sample's verdict as it lands (file, task, verdict, stage: flag, seconds), a
table at the end on a terminal, JSON lines with ``--json``, and a one-line note when several files are one problem's
samples."""

import json

import pytest

from tests.helpers.fake_verifier import FakeVerifier
from tests.test_evaluate import KB_FIXTURE
from tritonrl.cli import main, verdicts
from tritonrl.evaluation import evaluate
from tritonrl.verify.shared.verdict import Stage, VerifyResult


class TimedVerifier(FakeVerifier):
    """``FakeVerifier`` verdicts that took 1.25 s, streamed as ``verify_iter`` does (the last file first); a wrong
    answer fails at the full stage with a mismatch."""

    def verify_iter(self, items, stop=None):
        for i in reversed(range(len(items))):
            result = self.verify_many([items[i]])[0]
            if "wrong" in (items[i].code or ""):
                result = VerifyResult(Stage.FULL, valid=True, compiled=True, tiny_correct=True,
                                      flags=["output_mismatch"], error="full0 (seed 42): output 0: 3/9 values off\n"
                                                                        "hint: look closer")
            result.elapsed_s = 1.25
            yield i, result


@pytest.fixture
def sols(tmp_path, monkeypatch):
    """Three files for level-2 problem 3 (correct, wrong, not a kernel) and one for problem 2."""
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "level2_3.py").write_text("class ModelNew: GOOD")
    (sols / "level2_3_wrong.py").write_text("class ModelNew: wrong")
    (sols / "level2_3_prose.py").write_text("no code here")
    (sols / "2.py").write_text("class ModelNew: GOOD")
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=TimedVerifier(), **kw))
    return sols


def run(sols, out, *extra):
    return main(["eval", "--solutions", str(sols), "--tasks", str(KB_FIXTURE), "--level", "2", "--out", str(out),
                 *extra])


def test_each_verdict_is_printed_as_it_lands_then_the_summary_with_a_note(sols, tmp_path, capsys):
    assert run(sols, tmp_path / "out") == 0
    lines = capsys.readouterr().out.splitlines()
    problem3 = "3_Gemm_LayerNorm_GELU_Scale"
    assert lines[:6] == [  # in the order they landed (the fake streams the last sample first)
        f"{sols / 'level2_3_wrong.py'}  {problem3}  REJECTED  full: output_mismatch  1.2 s",
        "    full0 (seed 42): output 0: 3/9 values off",
        "    hint: look closer",
        f"{sols / 'level2_3_prose.py'}  {problem3}  REJECTED  extract: no_code  1.2 s",
        f"{sols / 'level2_3.py'}  {problem3}  CORRECT  done  1.2 s",
        f"{sols / '2.py'}  2_Conv2d_GroupNorm_ReLU  CORRECT  done  1.2 s",
    ]
    assert lines[6].startswith("4 samples, 2 tasks: ") and "pass@1 66.7%" in lines[6]  # no table: not a terminal
    assert lines[7] == (f"note: several files for one problem are its samples ({problem3} 3 files): pass@k counts "
                        "a problem solved when any of k of its files is correct; pass@1 is the share of its files "
                        "that are")
    assert lines[8] == f"report: {tmp_path / 'out' / 'report.md'}"
    assert "Note: several files for one problem are its samples" in (tmp_path / "out" / "report.md").read_text()


def test_a_terminal_gets_a_table_of_every_verdict_at_the_end(sols, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(verdicts, "is_terminal", lambda stream=None: True)
    assert run(sols, tmp_path / "out") == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("") + 1
    table = out[start:start + 5]
    assert table[0].split() == ["sample", "task", "verdict", "stage:", "flag", "time"]
    assert [row.split()[2] for row in table[1:]] == ["CORRECT", "CORRECT", "REJECTED", "REJECTED"]  # in order
    assert table[1].startswith(str(sols / "2.py")) and table[4].startswith(str(sols / "level2_3_wrong.py"))
    column = table[0].index("task")  # aligned: each row's task starts under the header's
    assert [row[column:].split()[0] for row in table[1:]] == ["2_Conv2d_GroupNorm_ReLU"] + [
        "3_Gemm_LayerNorm_GELU_Scale"] * 3


def test_json_prints_one_object_per_verdict_then_a_summary(sols, tmp_path, capsys):
    assert run(sols, tmp_path / "out", "--json") == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["file"].rsplit("/", 1)[1], r["correct"], r["stage"]) for r in rows[:4]] == [
        ("level2_3_wrong.py", False, "full"), ("level2_3_prose.py", False, "extract"), ("level2_3.py", True, "done"),
        ("2.py", True, "done")]
    assert rows[0]["flags"] == ["output_mismatch"] and rows[0]["elapsed_s"] == 1.25 and rows[0]["sample"] == 2
    summary = rows[4]["summary"]
    assert summary["n_samples"] == 4 and summary["pass_at_k"]["pass@1"] == pytest.approx(2 / 3)
    assert summary["note"].startswith("note: several files") and summary["report"].endswith("report.md")
    assert len(rows) == 5


def test_a_completions_sample_is_named_by_its_number(tmp_path, capsys, monkeypatch):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"task": "l1_relu", "completion": f"```python\nclass ModelNew: {w}\n```"})
                            + "\n" for w in ("GOOD", "bad")))
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=TimedVerifier(), **kw))
    assert main(["eval", "--completions", str(path), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "#1  l1_relu  REJECTED  compile: import_error  1.2 s"
    assert lines[1] == "#0  l1_relu  CORRECT  done  1.2 s"
    assert not lines[2].startswith("note:")  # samples of a model are what pass@k is for: no note
