"""SIGTERM/SIGINT in task generation: it stops after the verdict under way with the accepted tasks and every verdict
on disk, the directory is not marked complete (no ``generation_report.json``, no ``tasks.jsonl``), and a rerun
with the same arguments verifies only what was not judged and writes the same bytes as an uninterrupted run."""

import json
import signal
import zlib

import pytest

from tests.taskgen.test_taskgen import tree_bytes
from tests.test_eval_stop import send
from tritonrl.errors import Stopped
from tritonrl.taskgen import PROGRESS_JSONL, generate_tasks
from tritonrl.verify.shared.verdict import Stage, VerifyResult


class SignallingVerifier:
    """Accepts a reference unless ``reject`` says no (a function of the task, as a real verdict is), streaming its
    verdicts; sends ``signum`` to this process just before verdict number ``at`` (counted from 0)."""

    def __init__(self, reject=lambda task: False, at: int | None = None, signum: int = signal.SIGTERM):
        self.reject, self.at, self.signum, self.seen = reject, at, signum, 0

    def verify_iter(self, items, stop=None):
        for i, item in enumerate(items):
            if stop is not None and stop.is_set():  # one at a time: none is under way, the stream has drained
                return
            if self.seen == self.at:
                send(self.signum)
            self.seen += 1
            assert item.code == item.task.solution
            ok = not self.reject(item.task)
            yield i, VerifyResult(stage=Stage.DONE if ok else Stage.FULL, valid=True, compiled=True, tiny_correct=ok,
                                  correct=ok, error=None if ok else "mismatch")


def every_third(task) -> bool:
    return zlib.crc32(task.name.encode()) % 3 == 0


def progress_rows(out):
    return [json.loads(line) for line in (out / PROGRESS_JSONL).read_text().splitlines()[1:]]


def test_sigterm_keeps_the_accepted_tasks_and_a_rerun_ends_with_the_same_bytes(tmp_path):
    whole = SignallingVerifier(every_third)
    reference = generate_tasks(10, 1, "train", tmp_path / "whole", verifier=whole)
    assert reference.verify_failed > 0 and whole.seen > 10  # rejections made a second batch

    out = tmp_path / "out"
    first = SignallingVerifier(every_third, at=6)
    with pytest.raises(Stopped, match=r"tasks generate: stopped by SIGTERM after 5/10 train tasks accepted \(7 "
                                      r"references judged, in .*generation_progress.jsonl\); run again to resume"):
        generate_tasks(10, 1, "train", out, verifier=first)
    assert first.seen == 7  # stopped after the verdict under way
    verdicts = progress_rows(out)
    accepted = sorted(v["name"] for v in verdicts if v["correct"])
    assert len(verdicts) == 7 and len(accepted) == 5
    assert sorted(p.stem for p in (out / "solutions").glob("*.py")) == accepted  # written as accepted
    assert not (out / "generation_report.json").exists() and not (out / "tasks.jsonl").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    second = SignallingVerifier(every_third)  # the same draws again: the 7 recorded verdicts stand
    report = generate_tasks(10, 1, "train", out, verifier=second)
    assert second.seen == whole.seen - 7  # only the references not judged before
    assert report == reference
    assert tree_bytes(out) == tree_bytes(tmp_path / "whole")  # the progress file is gone once complete


def test_sigint_works_the_same_and_other_arguments_start_afresh(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(Stopped, match="stopped by SIGINT after 2/6"):
        generate_tasks(6, 2, "heldout", out, verifier=SignallingVerifier(at=1, signum=signal.SIGINT))
    assert len(progress_rows(out)) == 2
    fresh = SignallingVerifier()
    generate_tasks(4, 2, "heldout", out, verifier=fresh)  # another n: nothing recorded applies
    assert fresh.seen == 4 and not (out / PROGRESS_JSONL).exists()
    generate_tasks(4, 2, "heldout", tmp_path / "whole", verifier=SignallingVerifier())
    assert tree_bytes(out) == tree_bytes(tmp_path / "whole")


def test_cli_generate_stopped_exits_143_and_the_same_command_finishes(tmp_path, monkeypatch, capsys):
    import tritonrl.taskgen as generate
    from tritonrl.cli import main

    verifiers = iter([SignallingVerifier(at=2), SignallingVerifier()])
    real = generate.generate_tasks
    monkeypatch.setattr(generate, "generate_tasks", lambda *a, **kw: real(*a, **kw, verifier=next(verifiers)))
    command = ["tasks", "generate", "--n", "4", "--out", str(tmp_path / "gen")]
    assert main(command) == 143
    err = capsys.readouterr().err
    assert err.startswith("tritonrl: tasks generate: stopped by SIGTERM after 3/4 train tasks accepted")
    assert len(err.splitlines()) == 1
    assert main(command) == 0
    assert len((tmp_path / "gen" / "tasks.jsonl").read_text().splitlines()) == 4
