"""Timing shapes of the bundled suite (``bundled/timing_shapes.json``, ``timing_variant``): every task has one, it
runs on the meta device, the reference solution's host code takes it, and it meets the H100 size target with all
trials under 8 GiB. Also ``benchmarks/bundled_gpu.py`` without a GPU: dry run, the summary, the resumable table."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import torch

from tritonrl.cli import main as cli
from tritonrl.errors import TaskError
from tritonrl.tasks import load_tasks
from tritonrl.tasks.model import KernelTask
from tritonrl.tasks.variants import _make_timing, task_traffic, timing_shapes, timing_variant

ROOT = Path(__file__).resolve().parents[2]
TASKS = load_tasks("bundled")
GIB = 1 << 30
MAX_BLOCK = 8192  # widest block a reference solution may hold in one program at its timing shape (registers)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bundled_gpu", ROOT / "benchmarks" / "bundled_gpu.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def estimates(bench):
    from tritonrl.config import VerifyConfig

    return {t.name: bench.estimate(t, VerifyConfig(device="cuda")) for t in TASKS}


def test_every_bundled_task_has_a_timing_shape_of_its_own_constants():
    assert sorted(timing_shapes()) == sorted(t.name for t in TASKS) and len(TASKS) == 51
    for task in TASKS:
        timing = timing_variant(task)
        assert timing.variant == "timing" and timing.name == task.name and timing.solution == task.solution
        assert set(timing.meta["changes"]) == {k for k, v in timing_shapes()[task.name]["sizes"].items()}
        assert timing_variant(task) is timing  # cached


def test_no_timing_shape_for_other_tasks_or_variants():
    task = next(t for t in TASKS if t.name == "l1_relu")
    assert timing_variant(KernelTask("l1_relu", 1, task.source, origin="kernelbench")) is None
    assert timing_variant(timing_variant(task)) is None
    with pytest.raises(TaskError, match="does not define: nope"):
        _make_timing(task, {"nope": 3})
    with pytest.raises(TaskError, match="does not run"):
        _make_timing(next(t for t in TASKS if t.name == "l2_swiglu"), {"tokens": 0})


class _NoLaunch:
    """Triton launches replaced by a record of their block sizes: the solution's host code runs on meta."""

    def __init__(self) -> None:
        self.blocks: list[int] = []

    def __call__(self, fn, *args, grid, warmup, **kwargs):
        self.blocks += [v for k, v in kwargs.items() if k.startswith("BLOCK") and isinstance(v, int)]


def _load(source: str, path: Path):
    path.write_text(source)  # @triton.jit reads its source back from a file
    spec = importlib.util.spec_from_file_location(f"sol_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_and_solution_take_the_timing_shape_on_meta(tmp_path, monkeypatch):
    """Model and the bundled ModelNew (kernels not launched) give the same output shapes; no block over 8192."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    record = _NoLaunch()
    for cls in (InterpretedFunction, JITFunction):
        monkeypatch.setattr(cls, "run", lambda self, *a, grid, warmup, **k: record(self, *a, grid=grid,
                                                                                     warmup=warmup, **k))
    wide = {}
    for task in TASKS:
        timing = timing_variant(task)
        ref = _load(timing.source, tmp_path / f"{task.name}_ref.py")
        sol = _load(task.solution, tmp_path / f"{task.name}_sol.py")
        record.blocks.clear()
        with torch.device("meta"), torch.no_grad():
            inputs = ref.get_inputs()
            expected = ref.Model(*ref.get_init_inputs())(*inputs)
            got = sol.ModelNew(*ref.get_init_inputs())(*inputs)
        assert got.shape == expected.shape and got.dtype == expected.dtype, task.name
        assert record.blocks, f"{task.name}: no Triton launch seen"
        if max(record.blocks) > MAX_BLOCK:
            wide[task.name] = max(record.blocks)
    assert not wide, f"blocks too wide for one program at the timing shape: {wide}"


def test_timing_shapes_meet_the_h100_target_or_say_why(estimates):
    """>= 0.5 ms estimated on an H100, or memory-bound and >= 64 MiB moved; tasks that cannot carry a reason."""
    excused = {name: e["below_target"] for name, e in timing_shapes().items() if e.get("below_target")}
    missing = sorted(name for name, est in estimates.items() if not est["meets_target"] and name not in excused)
    assert not missing, f"below the size target without a below_target reason: {missing}"
    assert all(not estimates[name]["meets_target"] for name in excused), "below_target on a task that meets it"
    print("tasks below the target:", excused or "none")


def test_all_trials_of_a_task_fit_in_8_gib(estimates):
    over = {name: est["trials_gib"] for name, est in estimates.items() if est["trials_gib"] > 8}
    assert not over, f"all trials together over 8 GiB: {over}"


def test_estimates_count_bytes_and_flops():
    relu = timing_variant(next(t for t in TASKS if t.name == "l1_relu"))
    traffic = task_traffic(relu.source)
    assert traffic.input_bytes == traffic.output_bytes == 4096 * 16384 * 4 and traffic.flops == 0
    assert traffic.memory_bound and traffic.meets_target and 0.1 < traffic.est_ms < 0.3
    gemm = task_traffic(timing_variant(next(t for t in TASKS if t.name == "l2_gemm_bias_relu")).source)
    assert gemm.flops == 2 * 1024 * 4096 * 4096 and not gemm.memory_bound and gemm.est_ms > 0.5
    conv = task_traffic(timing_variant(next(t for t in TASKS if t.name == "l2_conv_relu_bias")).source)
    assert conv.conv_flops > 0 and conv.flops == 0


def test_tasks_show_prints_the_timing_shape(capsys):
    assert cli(["tasks", "show", "l1_relu"]) == 0
    out = capsys.readouterr().out
    assert "# timing shape (GPU full trials and timing): batch_size 16 -> 4096, dim 1024 -> 16384" in out
    assert "estimate (H100): 0.179 ms, 512 MiB" in out
    path = ROOT / "tests" / "fixtures" / "kernelbench"
    file_task = next(path.glob("level*/*.py"))
    assert cli(["tasks", "show", str(file_task)]) == 0
    assert "# timing shape (GPU): as written" in capsys.readouterr().out


def test_bench_dry_run_lists_tasks_with_estimates(bench, capsys):
    bench.main(["--dry-run", "--tasks", "l1_relu,l2_gemm_bias_relu", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert [r["task"] for r in data["tasks"]] == ["l1_relu", "l2_gemm_bias_relu"] and data["est_total_s"] > 0
    assert data["tasks"][1]["sizes"] == {"batch_size": 1024, "in_features": 4096, "out_features": 4096}
    with pytest.raises(SystemExit, match="nope"):
        bench.main(["--dry-run", "--tasks", "nope"])


def _repeat(speedup, ref_ms=0.7, correct=True, error=None):
    return {"correct": correct, "stage": "timing" if correct else "full", "flags": [], "error": error,
            "speedup": speedup, "ref_ms": ref_ms, "runtime_ms": ref_ms / speedup if speedup else None, "speedup_vs_compile": None,
            "ref_compile_ms": None}


def test_bench_summary_flags_spread_and_failures(bench):
    steady = bench.summarize("a", [_repeat(s) for s in (0.300, 0.301, 0.299, 0.300, 0.302)])
    assert steady["cv_ok"] and steady["speedup"] == 0.3 and steady["speedup_cv"] < 0.01 and steady["cv_why"] is None
    noisy = bench.summarize("b", [_repeat(s) for s in (0.30, 0.36, 0.27, 0.31, 0.33)])
    assert not noisy["cv_ok"] and "solution's runtime varies most" in noisy["cv_why"]
    broken = bench.summarize("c", [_repeat(0.3)] * 4 + [_repeat(None, correct=False, error="output_mismatch")])
    assert not broken["cv_ok"] and broken["correct"] == "4/5" and "not correct in 1/5" in broken["cv_why"]
    tiny = bench.summarize("d", [_repeat(s, ref_ms=0.01) for s in (1.0, 1.2, 0.9)])
    assert "launch" in tiny["cv_why"]


def test_bench_table_resumes_from_the_jsonl(bench, tmp_path, capsys):
    jsonl = tmp_path / "rows.jsonl"
    rows = [{**bench.summarize(name, [_repeat(0.3)] * 2), "device": "H100"} for name in ("b_task", "a_task")]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert set(bench.finished(jsonl)) == {"a_task", "b_task"}
    table = bench.write_table(jsonl, tmp_path / "out" / "table.json")
    assert [r["task"] for r in table] == ["a_task", "b_task"]
    assert json.loads((tmp_path / "out" / "table.json").read_text()) == table
    assert "2 tasks" in capsys.readouterr().out


def test_bench_clears_a_cache_but_keeps_its_key(bench, tmp_path):
    (tmp_path / ".hmac-key").write_bytes(b"k" * 32)
    (tmp_path / "ref-1.pt").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    bench.clear_cache(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == [".hmac-key"]


def test_bundled_gpu_claims_give_each_task_to_one_process(bench, tmp_path):
    """One process per GPU shares a claim directory: the first to claim a task runs it, the others skip it."""
    assert bench.claim(tmp_path / "claims", "l1_relu") is True
    assert bench.claim(tmp_path / "claims", "l1_relu") is False
    assert bench.claim(tmp_path / "claims", "l1_softmax") is True
