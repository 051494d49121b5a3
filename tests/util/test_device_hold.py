"""scripts/device_hold.sh: a plan of commands run in the background of one device hold, every finished file sent
back as one archive (the device returns 8 files at most), a failing command logged and passed."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _hold(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RESULTS": str(tmp_path / "results"), "OUT": str(tmp_path / "out"), "POLL": "1"}
    return subprocess.run(["bash", str(ROOT / "scripts" / "device_hold.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_plan_runs_in_order_and_comes_back_as_one_archive(tmp_path):
    plan = tmp_path / "plan.txt"
    plan.write_text("# a comment\necho one > $RESULTS/a.txt\nexit 3\n\necho two > $RESULTS/b.txt\n")
    done = _hold(tmp_path, "start", str(plan), "60")
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "out" / "plan.log").read_text()
    assert "[1] exit 0" in log and "[2] exit 3" in log and "[3] exit 0" in log and log.rstrip().endswith("done")
    with tarfile.open(tmp_path / "out" / "results.tgz") as archive:
        names = set(archive.getnames())
    assert {"results/a.txt", "results/b.txt", "results/plan.log", "results/step2.log"} <= names
    again = _hold(tmp_path, "start", str(plan))
    assert again.returncode == 2 and "already ran" in again.stderr  # one plan a machine


def test_a_missing_plan_is_one_line_and_exit_2(tmp_path):
    missing = _hold(tmp_path, "start", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2 and "no plan file" in missing.stderr
    assert _hold(tmp_path).returncode == 2
