"""benchmarks/kernelbench_vs_tritonrl.py on CPU: dry run, candidate files, KernelBench's process plumbing (against a
stand-in clone), the comparison, the busy sampler. With ``KERNELBENCH_DIR`` (a real clone; ``-m slow``): the CPU
check of one problem's candidates through our verifier, and KernelBench's real ``eval`` imported by the child."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/kernelbench_vs_tritonrl.py")


def test_dry_run_lists_and_parses_every_candidate(bench, capsys):
    assert bench.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "6 problems x 8 kinds = 48 candidates" in out
    assert "UNEXPECTED" not in out and "dry run: OK" in out


def test_candidates_match_their_generator():
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "kernelbench_candidates" / "generate.py"),
                           "--check"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


FAKE_EVAL = '''
import time
from pydantic import BaseModel

class KernelExecResult(BaseModel):
    compiled: bool = False
    correctness: bool = False
    metadata: dict = {}
    runtime: float = -1.0
    runtime_stats: dict = {}
    ref_runtime: float = -1.0
    ref_runtime_stats: dict = {}

def eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42, num_correct_trials=1,
                            num_perf_trials=10, measure_performance=False, timing_method="cuda_event",
                            verbose=False, build_dir=None, device=None, backend="cuda", precision=None):
    assert "class Model" in original_model_src and (num_correct_trials, num_perf_trials) == (5, 100)
    assert backend == "triton" and measure_performance
    try:
        compile(custom_model_src, "<custom>", "exec")
    except SyntaxError as exc:
        return KernelExecResult(compiled=False, metadata={"compilation_error": exc})
    if "while True" in custom_model_src:
        while True:
            time.sleep(0.1)
    return KernelExecResult(compiled=True, correctness=True, runtime=1.5, ref_runtime=3.0,
                            metadata={"correctness_trials": "(5 / 5)"})
'''


def test_kernelbench_process_per_candidate_with_timeout(bench, tmp_path):
    """A stand-in clone whose eval judges by the source: verdicts, runtimes, the hang killed and failed."""
    clone = tmp_path / "KernelBench-clone"
    (clone / "src" / "kernelbench").mkdir(parents=True)
    (clone / "src" / "kernelbench" / "__init__.py").write_text("")
    (clone / "src" / "kernelbench" / "eval.py").write_text(FAKE_EVAL)
    level2 = clone / "KernelBench" / "level2"
    level2.mkdir(parents=True)
    problem = "12_Gemm_Multiply_LeakyReLU"
    (level2 / f"{problem}.py").write_text(textwrap.dedent("""
        import torch
        class Model(torch.nn.Module):
            pass
        def get_inputs():
            return []
        def get_init_inputs():
            return []
    """))
    cands = bench.load_candidates([problem], ["ok_t64x64x64_w4s3", "bad_syntax_error"])
    seen = []
    rows, wall = bench.run_kernelbench(str(clone), cands, timeout_s=120.0, n_correct=5, n_perf=100,
                                       on_row=lambda c, r: seen.append(c.kind))
    ok, syntax = rows
    assert seen == ["ok_t64x64x64_w4s3", "bad_syntax_error"]
    assert ok["correct"] and ok["compiled"] and ok["runtime_ms"] == 1.5 and ok["ref_runtime_ms"] == 3.0, ok
    assert not syntax["correct"] and not syntax["compiled"] and not syntax["timed_out"], syntax
    assert wall >= sum(r["wall_s"] for r in rows) - 0.5
    (hang,), _ = bench.run_kernelbench(str(clone), bench.load_candidates([problem], ["bad_hang"]), timeout_s=3.0,
                                       n_correct=5, n_perf=100)
    assert hang["timed_out"] and not hang["correct"] and 3.0 <= hang["wall_s"] < 30, hang
    assert "hang timeout" in hang["error"]


def test_summary_agreement_runtime_and_explanations(bench):
    cands = bench.load_candidates(["86_Matmul_Divide_GELU"],
                                  ["ok_t128x128x32_w8s3", "bad_torch_fallback", "bad_tf32", "bad_hang"])
    ours = [
        {"correct": True, "stage": "done", "flags": [], "error": None, "runtime_ms": 1.1, "elapsed_s": 3.0},
        {"correct": False, "stage": "static", "flags": ["torch_compute"], "error": "x", "runtime_ms": None},
        {"correct": False, "stage": "full", "flags": ["output_mismatch"], "error": "rel L2", "runtime_ms": None},
        {"correct": False, "stage": "tiny", "flags": ["timeout"], "error": "timed out", "runtime_ms": None},
    ]
    kb = [
        {"correct": True, "runtime_ms": 1.0, "wall_s": 7.0},
        {"correct": True, "runtime_ms": 3.2, "wall_s": 7.0},
        {"correct": True, "runtime_ms": 0.4, "wall_s": 7.0},
        {"correct": False, "runtime_ms": None, "wall_s": 20.0, "timed_out": True, "error": "killed"},
    ]
    busy = {"tritonrl": {"busy_fraction": 0.5, "method": "injected"}}
    s = bench.summarize(cands, ours, 12.0, kb, 41.0, busy)
    assert s["verdict_agreement"] == 0.5
    assert s["runtime_median_abs_diff"] == pytest.approx(0.1)
    assert s["tritonrl_s_per_candidate"] == 3.0 and s["kernelbench_s_per_candidate"] == 10.25
    assert s["ratio"] == pytest.approx(10.25 / 3.0)
    assert s["matches_expected"] == {"tritonrl": 1.0, "kernelbench": 0.5}
    why = {d["candidate"].split("/")[1]: d["explanation"] for d in s["disagreements"]}
    assert set(why) == {"bad_torch_fallback", "bad_tf32"}
    assert why["bad_torch_fallback"].startswith("KernelBench fooled: it accepts the PyTorch fallback")
    assert "TF32" in why["bad_tf32"] and "relative L2" in why["bad_tf32"]
    assert s["gpu_busy_fraction"] == {"tritonrl": 0.5}
    # partial (KernelBench still running): no ratio yet, rows judged only where both ran
    partial = bench.summarize(cands, ours, 12.0, kb[:1], None, busy)
    assert partial["ratio"] is None and partial["verdict_agreement"] == 1.0


def test_busy_sampler_averages_samples(bench):
    values = iter([0.0, 100.0] * 1000)
    with bench.BusySampler(interval_s=0.01, read=lambda: next(values)) as sampler:
        import time

        time.sleep(0.2)
    summary = sampler.summary()
    assert summary["samples"] >= 4 and summary["method"] == "injected"
    assert 0.3 <= summary["busy_fraction"] <= 0.7


def test_batch_timeline_places_verdicts_leases_and_samples_per_second(bench):
    from types import SimpleNamespace

    began = 100.0
    result = SimpleNamespace(timing={"span": [100.0, 102.5], "session_span": [100.5, 101.0, 102.5],
                                     "fork_span": [100.1, 100.3, 100.35],
                                     "gpu_lease": [["shared", 101.0, 101.5], ["exclusive", 102.0, 102.5]]})
    row = {"timeline": bench.row_timeline(result, began)}
    assert row["timeline"] == {"span": [0.0, 2.5], "session": [0.5, 1.0, 2.5], "fork": [0.1, 0.3, 0.35],
                               "leases": [["shared", 1.0, 1.5], ["exclusive", 2.0, 2.5]]}
    sampler = SimpleNamespace(times=[100.2, 100.7, 101.2, 102.1], samples=[0.0, 10.0, 50.0, 90.0])
    steps = bench.batch_timeline([row, None], sampler, began, wall=2.5)
    assert [s["t"] for s in steps] == [0.0, 1.0, 2.0]
    assert [s["verifying"] for s in steps] == [1.0, 1.0, 0.5]
    assert [s["sessions"] for s in steps] == [0.5, 1.0, 0.5]
    assert [s["shared"] for s in steps] == [0.0, 0.5, 0.0]
    assert [s["exclusive"] for s in steps] == [0.0, 0.0, 0.5]
    assert [s["gpu_util"] for s in steps] == [5.0, 50.0, 90.0]



def test_idle_seconds_are_split_by_what_the_batch_was_doing(bench):
    def step(t, sessions, shared, exclusive, util):
        return {"t": t, "verifying": 1.0, "sessions": sessions, "shared": shared, "exclusive": exclusive,
                "gpu_util": util}

    timeline = [step(0, 0.0, 0.0, 0.0, 0.0), step(1, 3.0, 0.0, 0.0, 20.0), step(2, 3.0, 2.0, 0.0, 100.0),
                step(3, 3.0, 0.0, 1.0, 60.0), step(4, 3.0, 0.0, 0.6, 80.0), step(5, 1.0, 0.0, 0.0, 0.0),
                step(6, 1.0, 0.0, 0.0, None)]
    phases = bench.idle_by_phase(timeline)
    assert phases["start"] == {"s": 1, "idle_s": 1.0, "util": 0.0}
    assert phases["compile"] == {"s": 1, "idle_s": 0.8, "util": 20.0}
    assert phases["trials"] == {"s": 1, "idle_s": 0.0, "util": 100.0}
    assert phases["timing"] == {"s": 2, "idle_s": 0.6, "util": 70.0}
    assert phases["tail"] == {"s": 1, "idle_s": 1.0, "util": 0.0}  # a second with no sample is not counted


KERNELBENCH_DIR = os.environ.get("KERNELBENCH_DIR")


@pytest.mark.slow
@pytest.mark.skipif(not KERNELBENCH_DIR, reason="set KERNELBENCH_DIR to a KernelBench clone")
def test_cpu_check_one_problem(bench, capsys):
    """Our verifier on CPU, shrunk shapes: every candidate of problem 86 gets the verdict its name says."""
    assert bench.main(["--cpu-check", "--kernelbench", KERNELBENCH_DIR, "--problems", "86_Matmul_Divide_GELU",
                       "--hang-timeout", "5"]) == 0
    assert "cpu check: 8/8 as expected" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(not KERNELBENCH_DIR, reason="set KERNELBENCH_DIR to a KernelBench clone")
def test_real_kernelbench_eval_imports_in_the_child(bench):
    """The child imports the clone's kernelbench.eval (stand-ins for missing LLM clients); without CUDA its
    eval_kernel_against_ref raises, which the child records as not compiled, as KernelBench's scripts do."""
    if not (bench.kernelbench_root(KERNELBENCH_DIR) / "src" / "kernelbench" / "eval.py").is_file():
        pytest.skip("KERNELBENCH_DIR has no src/kernelbench (a problems folder, not a clone)")
    cands = bench.load_candidates(["12_Gemm_Multiply_LeakyReLU"], ["ok_t64x64x64_w4s3"])
    (row,), _ = bench.run_kernelbench(KERNELBENCH_DIR, cands, timeout_s=120, n_correct=5, n_perf=100)
    assert row["import_s"] is not None, row  # kernelbench.eval imported
    assert not row["correct"] and not row["timed_out"]
    import torch

    if not torch.cuda.is_available():
        assert "CUDA" in (row["error"] or ""), row
