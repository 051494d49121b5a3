"""What an eval that did not finish leaves in ``--out``: nothing when it wrote no sample, else ``status.json`` saying
``interrupted``, why (stdout closed, Ctrl-C, SIGTERM) and the command that finishes it; the rerun's refusal names
the one flag to add (``--resume``; ``--overwrite`` for a finished run)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.fake_verifier import FakeVerifier
from tests.test_evaluate import write_jsonl
from tritonrl.cli import main
from tritonrl.evaluation import evaluate

ROOT = Path(__file__).resolve().parents[1]
REJECTED = (ROOT / "examples" / "solutions" / "l1_gelu.py").read_text()  # torch_compute: rejected statically


def eval_command(sols: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "tritonrl", "eval", "--solutions", str(sols), "--out", str(out), "--device",
            "cpu", "--workers", "1", *extra]


def test_a_piped_eval_whose_reader_left_says_it_did_not_finish_and_resume_finishes_it(tmp_path):
    """``tritonrl eval ... | head -2``: the reader gone, the eval ends quietly (141, as SIGPIPE would) at its next
    verdict; the folder says so, and the rerun is told exactly which flag to add."""
    sols, out = tmp_path / "sols", tmp_path / "out"
    sols.mkdir()
    names = ("l1_relu", "l1_tanh", "l1_sigmoid")
    for name in names:
        (sols / f"{name}.py").write_text(REJECTED)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(eval_command(sols, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=tmp_path)
    proc.stdout.close()  # the reader is gone before the first verdict is printed, as `| head` is after its lines
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141 and stderr == ""
    kept = (out / "results.jsonl").read_text().splitlines()
    assert 1 <= len(kept) < len(names)
    status = json.loads((out / "status.json").read_text())
    assert status["status"] == "interrupted" and status["reason"] == "stdout was closed"
    assert status["resume"].endswith(f"--out {out} --device cpu --workers 1 --resume")

    again = subprocess.run(eval_command(sols, out), capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 2 and again.stderr == (
        f"tritonrl: error: --out {out} holds an eval that did not finish ({len(kept)} results in results.jsonl: "
        "stdout was closed); add --resume to finish it (--overwrite starts it again)\n")
    finished = subprocess.run(eval_command(sols, out, "--resume"), capture_output=True, text=True, env=env,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == len(names)
    assert json.loads((out / "status.json").read_text()) == {"status": "done"}


def test_an_eval_that_judged_nothing_leaves_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    sols = tmp_path / "sols"
    sols.mkdir()
    (sols / "no_such_task.py").write_text(REJECTED)
    assert main(["eval", "--solutions", str(sols), "--out", str(out)]) == 2
    assert not out.exists(), list(out.iterdir())
    assert "no_such_task" in capsys.readouterr().err


def test_a_stopped_eval_s_folder_names_the_signal_and_the_resume_command(tmp_path, monkeypatch, capsys):
    from tests.test_eval_stop import SignallingVerifier

    path = write_jsonl(tmp_path / "c.jsonl", [{"task": "l1_relu", "completion": f"class ModelNew: GOOD {i}"}
                                              for i in range(3)])
    out = tmp_path / "out"
    verifiers = iter([SignallingVerifier(at=0), FakeVerifier()])
    real = evaluate.verify_and_report
    monkeypatch.setattr(evaluate, "verify_and_report", lambda pending, verify, out_dir, meta=None, **kw:
                        real(pending, verify, out_dir, meta, **{**kw, "verifier": next(verifiers)}))
    command = ["eval", "--completions", str(path), "--out", str(out)]
    assert main(command) == 143
    assert json.loads((out / "status.json").read_text()) == {
        "status": "interrupted", "reason": "stopped by SIGTERM",
        "resume": f"tritonrl eval --completions {path} --out {out} --resume"}
    capsys.readouterr()
    assert main(command) == 2
    assert "did not finish (1 results in results.jsonl: stopped by SIGTERM); add --resume" in capsys.readouterr().err
    assert main([*command, "--resume"]) == 0
    assert json.loads((out / "status.json").read_text()) == {"status": "done"}
