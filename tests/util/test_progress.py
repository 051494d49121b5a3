"""The progress line of ``eval`` and multi-file ``verify``: done/total, correct so far, time left; drawn only on a
terminal, never with ``--json``."""

import io
import json
import sys

from tests.helpers.fake_verifier import FakeVerifier
from tests.test_evaluate import write_jsonl
from tritonrl.cli import main
from tritonrl.evaluation import evaluate
from tritonrl.util.progress import ProgressLine
from tritonrl.verify.shared.verdict import Stage, VerifyResult


class Terminal(io.StringIO):
    def isatty(self):
        return True


CORRECT = VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
WRONG = VerifyResult(Stage.COMPILE, valid=True, flags=["import_error"])
BROKEN = VerifyResult(Stage.COMPILE, flags=["verifier_error"])
DECLINED = VerifyResult(Stage.COMPILE, valid=True, correct=None, flags=["declined"], declined="not judged on this CPU")


def test_the_line_counts_done_correct_and_verifier_errors_and_estimates_time_left():
    screen = Terminal()
    with ProgressLine(6, "eval", stream=screen) as line:
        for result in (CORRECT, WRONG, CORRECT, BROKEN, DECLINED):
            line.update(result)
    last = screen.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("eval:  83%|") and "| 5/6, 2 correct, 1 declined, 1 verifier errors [" in last
    assert last.endswith("]") and "<" in last  # elapsed<remaining


def test_nothing_is_drawn_off_a_terminal_or_when_disabled():
    for stream, enabled in ((io.StringIO(), None), (Terminal(), False)):
        with ProgressLine(3, "eval", enabled=enabled, stream=stream) as line:
            line.update(CORRECT)
        assert stream.getvalue() == ""


def test_cli_eval_draws_the_line_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out, meta=None, verifier=None, **kw:
                        real(pending, verify, out, meta, verifier=FakeVerifier(), **kw))
    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": "class ModelNew: GOOD"},
                                              {"task": "l1_relu", "completion": "class ModelNew: bad"}])
    assert main(["eval", "--completions", str(path), "--out", str(tmp_path / "a")]) == 0
    assert "correct [" not in capsys.readouterr().err  # pytest's stderr is not a terminal
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    assert main(["eval", "--completions", str(path), "--out", str(tmp_path / "b")]) == 0
    assert "| 2/2, 1 correct [" in screen.getvalue()


def cheats(tmp_path, n=2):
    """Solution files the static checks reject (PyTorch does the work): judged in the parent, no child process."""
    for i in range(n):
        (tmp_path / f"cheat{i}.py").write_text("import torch\nclass ModelNew(torch.nn.Module):\n"
                                               f"    def forward(self, x):\n        return torch.relu(x) * {i + 1}\n")
    return [str(tmp_path / f"cheat{i}.py") for i in range(n)]


def test_cli_verify_of_several_files_draws_the_line_on_a_terminal_but_not_with_json(tmp_path, monkeypatch, capsys):
    files = cheats(tmp_path)
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    assert main(["verify", "--task", "l1_relu", "--solution", *files, "--device", "cpu"]) == 1
    assert "verify: 100%|" in screen.getvalue() and "| 2/2, 0 correct [" in screen.getvalue()
    assert capsys.readouterr().out.count("REJECTED") == 2
    screen.seek(0), screen.truncate()
    assert main(["verify", "--task", "l1_relu", "--solution", *files, "--device", "cpu", "--json"]) == 1
    assert screen.getvalue() == ""
    lines = capsys.readouterr().out.strip().splitlines()
    assert [json.loads(line).get("summary", {}).get("candidates") for line in lines] == [None, None, 2]


def test_verify_many_asked_for_progress_draws_the_same_line(tmp_path, monkeypatch):
    """One progress idea: ``Verifier.verify_many(progress=True)`` draws ``ProgressLine`` (counts of correct too)."""
    from pathlib import Path

    from tritonrl.config import VerifyConfig
    from tritonrl.tasks import get_task
    from tritonrl.verify import Verifier, VerifyItem

    task = get_task("l1_relu")
    items = [VerifyItem(task, code=Path(f).read_text()) for f in cheats(tmp_path)]
    stream = io.StringIO()  # not a terminal: drawn all the same, as asked
    monkeypatch.setattr(sys, "stderr", stream)
    with Verifier(VerifyConfig(device="cpu", workers=1)) as verifier:
        assert [r.correct for r in verifier.verify_many(items)] == [False, False]
        assert stream.getvalue() == ""
        verifier.verify_many(items, progress=True)
    assert "verify: 100%|" in stream.getvalue() and "| 2/2, 0 correct [" in stream.getvalue()


def test_the_progress_line_counts_the_verifiers_own_flag():
    """util/ lies below the verifier, so the progress line spells the verifier-error flag itself: the same value."""
    from tritonrl.util.progress import VERIFIER_ERROR
    from tritonrl.verify import Flag

    assert Flag.VERIFIER_ERROR.value == VERIFIER_ERROR
