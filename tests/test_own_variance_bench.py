"""``benchmarks/probes/own_variance.py`` and ``benchmarks/probes/child_timing_probe.py`` without a GPU: the CV table from
processes' samples, the tasks taken from a bundled_gpu.py JSONL, and each script's steps run on the CPU (Triton's
interpreter, tiny shapes, nothing timed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("own_variance", ROOT / "benchmarks" / "probes" / "own_variance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tasks_over_target_come_from_the_jsonl_last_row_per_task(bench, tmp_path):
    jsonl = tmp_path / "b.jsonl"
    rows = [{"task": "l1_relu", "cv_ok": True, "speedup_cv": 0.01},
            {"task": "l1_relu", "cv_ok": False, "speedup_cv": 0.04},  # the last row counts
            {"task": "l1_silu", "cv_ok": True, "speedup_cv": 0.01},
            {"task": "l1_gelu", "cv_ok": False, "speedup_cv": None}]  # not measured: nothing to compare
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert sorted(bench.over_target(jsonl)) == ["l1_relu"]


def test_summary_says_whose_spread_it_is(bench):
    steady = [{"task": "a", "ref_ms": 0.2, "sol_ms": 0.1 * (1 + 0.001 * k)} for k in range(5)]
    spread = [{"task": "b", "ref_ms": 0.2, "sol_ms": 0.1 * (1 + 0.05 * k)} for k in range(5)]
    samples = [[s, p] for s, p in zip(steady, spread)]  # five processes, each timing both tasks once
    table = {r["task"]: r for r in bench.summarize(samples, {"a": {"speedup": 2.0, "speedup_cv": 0.03}})}
    assert table["a"]["processes"] == 5 and table["a"]["own"] is False and table["a"]["judge_speedup_cv"] == 0.03
    assert table["b"]["own"] is True and table["b"]["sol_cv"] > 0.02 and table["b"]["ref_cv"] == 0
    assert table["b"]["judge_speedup"] is None


def test_a_task_builds_and_agrees_on_the_cpu(bench):
    assert bench.time_tasks(["l1_relu"], rounds=1, device="cpu") == [{"task": "l1_relu", "built": True}]


def test_child_timing_probe_runs_its_steps_on_the_cpu(tmp_path):
    """``benchmarks/probes/child_timing_probe.py --device cpu``: every way's steps (the monitored forward included) run
    under Triton's interpreter and agree with the reference; nothing is timed (a subprocess: it installs a
    Monitor for good)."""
    import os
    import subprocess

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT / "src")}
    out = tmp_path / "probe.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "probes" / "child_timing_probe.py"), "--device", "cpu",
                           "--tasks", "l1_relu,l1_gelu", "--json", str(out)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["task"] for r in rows] == ["l1_relu", "l1_gelu"]
    assert all(r["timed"] is False and r["launches"] == 1 for r in rows)
