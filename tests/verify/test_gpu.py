"""The verifier on a real GPU: runtime defences, calibrated timing, every bundled solution accepted.

    TRITONRL_TEST_CUDA=1 python -m pytest -m gpu tests/verify/test_gpu.py -q

All tests here are marked ``gpu``; ``tests/conftest.py`` skips them where CUDA is absent (CI, the CPU machines)
and leaves Triton's interpreter off when ``TRITONRL_TEST_CUDA=1``.
"""

from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tests.verify.test_runtime_hacks import FIXTURES, header
from tritonrl.common.reward import compute_reward
from tritonrl.config import VerifyConfig
from tritonrl.tasks.variants import find_constants, rewrite_constants
from tritonrl.verify import Flag, Stage, Verifier, VerifyItem
from tritonrl.verify.shared.timing_stats import estimates_agree, widen

pytestmark = pytest.mark.gpu

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"
GOOD = (RUNTIME / "good_relu.py").read_text()
GPU_CONFIG = {"device": "cuda", "timeout_s": 30.0, "warmup": 5, "timed_trials": 30}
SLOWER = 0.5          # a fixture with ~1 ms of hidden work must not reach this speedup over torch.relu (~0.02 ms)
DO_BENCH_REL = 0.10   # our median vs triton.testing.do_bench's median, same kernel (benchmark target: 5%)


def resized(task, **values):
    """The task with module-level constants replaced by name (KernelBench-size variants)."""
    constants = find_constants(task.source)
    edits = {i: values[c.name] for i, c in enumerate(constants) if c.name in values}
    assert len(edits) == len(values), f"constants not found: {values}"
    return task.with_variant("sized", rewrite_constants(task.source, constants, edits))


def gpu_expectation(path: Path) -> str | None:
    try:
        return header(path, "gpu")
    except AssertionError:
        return None


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory):
    """Every runtime fixture on the GPU, static checks off: each runtime defence on its own."""
    config = VerifyConfig(static_checks=False, cache_dir=str(tmp_path_factory.mktemp("gpu_rt")), **GPU_CONFIG)
    items = [VerifyItem(TASKS[header(p, "task")], code=p.read_text()) for p in FIXTURES]
    with Verifier(config) as verifier:
        return {p.name: r for p, r in zip(FIXTURES, verifier.verify_many(items))}


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_runtime_defence_on_gpu(fixture, gpu_results):
    result = gpu_results[fixture.name]
    expected = header(fixture, "expect").split("|")
    if expected != ["done"]:
        assert not result.correct and compute_reward(result) == 0.0, f"{fixture.name} was accepted"
        assert set(expected) & set(result.flags), f"{fixture.name}: flags {result.flags}, error {result.error}"
        return
    assert result.correct and result.stage == Stage.DONE, result.error
    assert result.speedup is not None and result.speedup > 0 and result.runtime_ms > 0
    assert Flag.SUSPICIOUS_SPEEDUP.value not in result.flags
    if gpu_expectation(fixture) == "no_speedup":  # hidden work (side stream, patched timer) is still counted
        assert result.speedup < SLOWER, f"{fixture.name}: speedup {result.speedup:.3g}, timing {result.timing}"


def test_timing_hacks_rejected_by_full_funnel(tmp_path):
    config = VerifyConfig(cache_dir=str(tmp_path), **GPU_CONFIG)
    names = ["side_stream_early_return.py", "timer_patch.py"]
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(TASKS["relu"], code=(RUNTIME / n).read_text()) for n in names])
    for name, result in zip(names, results):
        assert result.stage == Stage.STATIC and compute_reward(result) == 0.0, (name, result.flags)


def test_timing_report_is_complete(gpu_results):
    result = gpu_results["good_relu.py"]
    info = result.timing
    assert info["gpu"] and 10 <= info["candidate"]["trials"] <= GPU_CONFIG["timed_trials"]
    for side in ("candidate", "reference"):
        stats = info[side]
        # A few-microsecond kernel, timed without host time (the hold), minus the protocol's own cost: a sample
        # within the synchronize's wake-up jitter is clamped at 0 (seen on an H100), its median is not.
        assert 0 <= stats["p10_ms"] <= stats["median_ms"] <= stats["p90_ms"] and stats["median_ms"] > 0, stats
        assert stats["std_ms"] >= 0 and stats["trimmed_mean_ms"] > 0
    assert result.ref_runtime_ms == info["reference"]["median_ms"]
    assert result.speedup == pytest.approx(result.ref_runtime_ms / result.runtime_ms)
    assert info["peak_memory_bytes"] > 0


def test_same_kernel_timed_twice_agrees(tmp_path):
    """Two verifications of one kernel on a 256 MiB ReLU agree within their intervals, reference cached.

    A run's own interval is narrow (1%) but the median moves between runs (allocations, clocks: up to ~15% for
    memory-bound kernels on H100s); the run-to-run term ``RUN_TO_RUN_REL`` covers that. Both the candidate's
    medians (each run's interval widened by that term) and the speedups (whose intervals include it) must agree
    as two estimates of one quantity (``estimates_agree``)."""
    task = resized(TASKS["relu"], batch_size=8192, dim=8192)
    config = VerifyConfig(cache_dir=str(tmp_path), multi_input=False, staged=False, **GPU_CONFIG)
    with Verifier(config) as verifier:
        first, second = (verifier.verify(task, code=GOOD) for _ in range(2))
    assert first.correct and second.correct, (first.error, second.error)
    assert not first.timing["ref_cached"] and second.timing["ref_cached"]
    medians = [(r.runtime_ms, widen(*r.timing["candidate"]["median_ci_ms"])) for r in (first, second)]
    assert estimates_agree(*medians[0], *medians[1]), medians
    speedups = [(r.speedup, r.timing["speedup_ci95"]) for r in (first, second)]
    assert estimates_agree(*speedups[0], *speedups[1]), speedups


def test_time_forward_agrees_with_do_bench():
    import importlib.util

    import torch
    import triton.testing

    from tritonrl.verify.shared.timing_protocol import time_forward

    spec = importlib.util.spec_from_file_location("good_relu_fixture", RUNTIME / "good_relu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a real file: Triton's @jit reads the kernel's source back
    model = module.ModelNew()
    x = torch.randn(16384, 16384, device="cuda")

    def forward():
        return model(x)

    ours = time_forward(forward, warmup=10, trials=100)["median_ms"]
    theirs = triton.testing.do_bench(forward, warmup=25, rep=100, return_mode="median")
    assert abs(ours - theirs) <= DO_BENCH_REL * theirs, (ours, theirs)


def test_compile_baseline_is_reported(tmp_path):
    config = VerifyConfig(cache_dir=str(tmp_path), compile_baseline=True, multi_input=False, **GPU_CONFIG)
    with Verifier(config) as verifier:
        result = verifier.verify(TASKS["relu_timed"], code=GOOD)  # a size the timer resolves
    assert result.correct, result.error
    assert result.timing["ref_compile_ms"] > 0 and result.timing["speedup_vs_compile"] > 0


def test_all_bundled_solutions_accepted_and_timed(tmp_path):
    from tritonrl.tasks import load_tasks

    tasks = [t for t in load_tasks("bundled") if t.solution]
    config = VerifyConfig(cache_dir=str(tmp_path), device="cuda", timeout_s=120.0, warmup=3, timed_trials=20,
                          workers_per_gpu=4,  # import, compile and correctness overlap; timing stays exclusive
                          reference_memory_gb=16.0)  # ~2 GB of references per task at the timing shapes
    with Verifier(config) as verifier:
        results = verifier.verify_many([VerifyItem(t, code=t.solution) for t in tasks])
    bad = {t.name: (r.stage.value, r.flags, r.error) for t, r in zip(tasks, results)
           if not (r.correct and isinstance(r.speedup, float) and r.speedup > 0)}
    assert len(tasks) == 51 and not bad, bad


@pytest.mark.xfail(strict=False, reason=(
    "known gap, docs/benchmarks-history.md 'Verifier throughput (GPU)': on an H200 this passed once and failed once "
    "(5 of 6 medians within 2.7%, one 7.5% high; judged then by a fixed 10% band) with 3 children per GPU; exact timing under GPU sharing is "
    "not established, so workers_per_gpu stays 1 by default"))
def test_timing_exact_with_three_children_per_gpu(tmp_path):
    """workers_per_gpu=3: six copies of one kernel checked concurrently, each timed alone; medians agree."""
    task = resized(TASKS["relu"], batch_size=8192, dim=8192)
    config = VerifyConfig(cache_dir=str(tmp_path), workers_per_gpu=3, **GPU_CONFIG)
    with Verifier(config) as verifier:
        assert verifier.concurrency == 3 * verifier.workers
        results = verifier.verify_many([VerifyItem(task, code=f"# copy {k}\n{GOOD}") for k in range(6)])
    assert all(r.correct for r in results), [r.error for r in results]
    medians = sorted((r.runtime_ms, widen(*r.timing["candidate"]["median_ci_ms"])) for r in results)
    middle = medians[len(medians) // 2]
    assert all(estimates_agree(*one, *middle) for one in medians), medians
