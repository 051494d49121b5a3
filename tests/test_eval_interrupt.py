"""Ctrl-C in ``tritonrl eval``, as a terminal sends it (SIGINT to the command's process group), with the real
verifier: the first stops after the verdicts under way and says so, with nothing about a judge that died (exit 130);
the second exits 130 at once, without a traceback; what was judged stays, and ``--resume`` finishes the run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tritonrl.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
GOOD = ("l1_relu", "l1_gelu", "l1_sigmoid", "l1_tanh", "l1_silu", "l1_leaky_relu")
HANG = ("        x = x.contiguous()\n", "        while x.numel() > 0:\n            x = x.contiguous()\n")
NEVER = ("died", "GPU", "Traceback", "Error")  # in stderr


def start_eval(sols: Path, out: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-m", "tritonrl", "eval", "--solutions", str(sols), "--out", str(out),
                             "--device", "cpu", "--workers", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own group, as a terminal's foreground job


def rows(out: Path) -> int:
    path = out / "results.jsonl"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def wait_for_rows(proc: subprocess.Popen, out: Path, n: int, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while rows(out) < n:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


def solutions(tmp_path: Path, hanging: tuple[str, ...] = ()) -> Path:
    sols = tmp_path / "sols"
    sols.mkdir()
    for name in GOOD:
        code = get_task(name).solution
        if name in hanging:
            code = get_task("l1_relu").solution
            assert HANG[0] in code
            code = code.replace(*HANG)
        (sols / f"{name}.py").write_text(code)
    return sols


def test_first_ctrl_c_stops_after_the_verdicts_under_way_and_resume_finishes(tmp_path):
    sols, out = solutions(tmp_path), tmp_path / "out"
    proc = start_eval(sols, out)
    wait_for_rows(proc, out, 1)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 130, stderr  # SIGINT's status, as a shell reports Ctrl-C (SIGTERM: 143)
    kept = rows(out)
    assert 1 <= kept < len(GOOD)  # those under way finished and were kept; no new one started
    assert stderr.splitlines() == [
        "tritonrl: SIGINT: stopping after the verdicts under way; Ctrl-C again stops at once",
        f"tritonrl: eval: stopped by SIGINT after {kept}/{len(GOOD)} samples verified (in {out / 'results.jsonl'}); "
        "the same command with --resume continues"]
    assert len([line for line in stdout.splitlines() if "  CORRECT  " in line]) == kept  # each verdict printed

    again = start_eval(sols, out, "--resume")
    stdout, stderr = again.communicate(timeout=240)
    assert again.returncode == 0, stderr
    assert not any(word in stderr for word in NEVER), stderr
    assert rows(out) == len(GOOD) and f"{len(GOOD)} samples, {len(GOOD)} tasks" in stdout
    assert len([line for line in stdout.splitlines() if "  CORRECT  " in line]) == len(GOOD) - kept


def test_second_ctrl_c_exits_130_at_once_without_a_traceback(tmp_path):
    sols, out = solutions(tmp_path, hanging=("l1_sigmoid", "l1_silu")), tmp_path / "out"
    proc = start_eval(sols, out, "--timeout", "120")  # sorted: gelu, leaky_relu, relu, then sigmoid (hangs) ...
    wait_for_rows(proc, out, 3)
    time.sleep(1.0)  # the hanging candidates are running
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.3)
    second = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    exit_s = time.monotonic() - second
    assert proc.returncode == 130, stderr
    assert exit_s < 1.0, exit_s
    kept = rows(out)
    assert stderr.splitlines() == [
        "tritonrl: SIGINT: stopping after the verdicts under way; Ctrl-C again stops at once",
        f"tritonrl: interrupted: {kept} of {len(GOOD)} samples are in {out / 'results.jsonl'}; the same command with "
        "--resume judges only the rest"]
    assert kept >= 3 and "sigmoid" not in (out / "results.jsonl").read_text()
