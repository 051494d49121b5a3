"""``benchmarks/gpu_parallel.sh`` without a GPU: one queue per "GPU" started in the background, each with its
``CUDA_VISIBLE_DEVICES``, ``$GPU`` and ``$DIR``; ``wait`` reports each queue's exit status and packs the folder."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_queues_run_apart_and_report_their_exit_status(tmp_path):
    repo = tmp_path / "repo"  # a copy of the script alone: no carried wheels to install here
    (repo / "benchmarks").mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "gpu_parallel.sh", repo / "benchmarks")
    work, out = tmp_path / "work", tmp_path / "out"
    script = ["bash", str(repo / "benchmarks" / "gpu_parallel.sh")]
    started = subprocess.run([*script, "start", str(work), 'echo "a $GPU $CUDA_VISIBLE_DEVICES" > "$DIR/a.txt"',
                              "echo b; exit 3"], capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    waited = subprocess.run([*script, "wait", str(work), "30", str(out)], capture_output=True, text=True, timeout=60)
    assert waited.returncode == 0, waited.stderr
    assert "== gpu0: exit 0" in waited.stdout and "== gpu1: exit 3" in waited.stdout
    assert (work / "a.txt").read_text().strip() == "a 0 0"
    with tarfile.open(out / "gpu_parallel.tgz") as packed:
        names = {Path(n).name for n in packed.getnames()}
    assert {"gpu0.log", "gpu1.log", "gpu0.rc", "gpu1.rc", "a.txt"} <= names


def test_usage_is_explained():
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_parallel.sh")], capture_output=True, text=True)
    assert done.returncode == 2 and "start DIR" in done.stderr
