"""Checked, adaptive timing on a real GPU (H100/H200): the gpu_timing fixtures are caught, honest kernels are not.

    TRITONRL_TEST_CUDA=1 python -m pytest -m gpu tests/verify/test_gpu_timing.py -q

Two groups:
- ``test_*_timing_functions``: ``tritonrl.verify.shared.timing_protocol`` called directly (``CudaTimer``, ``time_calls``) on the
  fixtures' real Triton kernels, with the judge's protocol in miniature (fresh inputs before every call, every
  timed call checked); independent of how the judge and the child wire it.
- ``test_verifier_*``: the public ``Verifier`` API on CUDA: timing through the judge and the child
  (``timing_mismatch`` for a cheat, ``speedup_ci95`` for an honest kernel).
All are marked ``gpu``; ``tests/conftest.py`` skips them where CUDA is absent.
"""

import importlib.util
import statistics
from pathlib import Path

import pytest

from tests.verify.tasks import TASKS
from tests.verify.test_gpu import GPU_CONFIG, resized
from tests.verify.test_runtime_hacks import header
from tritonrl.config import VerifyConfig
from tritonrl.verify import Flag, Verifier, VerifyItem

pytestmark = pytest.mark.gpu

HERE = Path(__file__).parent / "fixtures"
FIXTURES = sorted((HERE / "gpu_timing").glob("*.py"))
GOOD = HERE / "runtime" / "good_relu.py"
BIG = {"batch_size": 8192, "dim": 8192}   # 256 MiB of fp32: memory-bound, far above launch overhead


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"gpu_timing_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # a real file: Triton's @jit reads the kernel's source back
    return module


def _checked(model, shape=(8192, 8192), seed=0, policy=None):
    """The judge's protocol in miniature: new input values before every call (into one tensor, outside the timed
    region), every timed call's output checked against torch.relu; (statistics, None) or (None, why rejected)."""
    import torch

    from tritonrl.verify.shared import timing_protocol

    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.empty(*shape, device="cuda")
    timer = timing_protocol.CudaTimer()

    def call(warm):
        x.normal_(generator=gen)
        timer.sync()
        with torch.no_grad():
            ms, out = timer(lambda: model(x))
        if not warm and not torch.allclose(out, torch.relu(x)):
            raise timing_protocol.TimedCallRejected("a timed call's output differs")
        if warm:
            timer.learn()  # as the judge's protocol: the warm-up sizes the hold
        return ms

    try:
        stats = timing_protocol.time_calls(call, policy=policy, overhead=lambda: timer(timing_protocol._nothing)[0])
    except timing_protocol.TimedCallRejected as exc:
        return None, str(exc)
    finally:
        timer.close()
    return stats, None


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_caught_by_timing_functions(path):
    import torch

    from tritonrl.verify.child.harness import poison_memory, unpoison_memory

    module = _load(path)
    poison_memory("cuda")  # correctness mode, as the harness: one honest call on a fresh model
    x = torch.randn(1024, 1024, device="cuda")
    assert torch.equal(module.ModelNew()(x), torch.relu(x))
    unpoison_memory()
    stats, verdict = _checked(module.ModelNew())
    assert verdict is not None, f"{path.name} passed the checked timing: median {stats['median_ms']} ms"


def test_honest_kernel_clean_and_adaptive_stop_agrees_with_fixed_count():
    """The adaptive stop does not bias the median: where it stops early (1% interval), the median agrees with 100
    fixed trials on the same tensors, each figure's interval widened by the run-to-run term (``estimates_agree``).

    With the verifier's warm-up, most runs on a 256 MiB ReLU stop early (``benchmarks/probes/timing_policy.py``: 4 of 5
    runs, the fifth ran to 100 trials); up to 3 runs are tried for one that does."""
    from tritonrl.config import VerifyConfig
    from tritonrl.verify.shared import timing_protocol
    from tritonrl.verify.shared.timing_stats import estimates_agree, median_ci, widen

    model = _load(GOOD).ModelNew()
    warmup_ms = VerifyConfig().timing_warmup_ms
    runs = []
    for _ in range(3):
        stats, verdict = _checked(model, policy=timing_protocol.TimingPolicy(warmup_ms=warmup_ms))
        assert verdict is None, verdict
        runs.append((stats["stopped"], stats["trials"], stats["median_ms"]))
        if stats["stopped"] == "ci":
            break
    assert stats["stopped"] == "ci" and stats["trials"] < 100, runs
    low, high = stats["median_ci_ms"]
    assert low <= stats["median_ms"] <= high and stats["ci_rel"] <= 0.01
    fixed, verdict = _checked(model, policy=timing_protocol.TimingPolicy(warmup_ms=warmup_ms, min_trials=100, max_trials=100))
    assert verdict is None and fixed["trials"] == 100, (verdict, fixed and fixed["trials"])
    adaptive = (stats["median_ms"], widen(low, high))
    fixed_ci = median_ci(fixed["samples_ms"])[:2]
    assert estimates_agree(*adaptive, fixed["median_ms"], widen(*fixed_ci)), (adaptive, fixed["median_ms"], fixed_ci)


def test_speedup_interval_of_a_kernel_against_itself_contains_one():
    """Two timing runs of one kernel, in one process: the speedup interval the verifier reports (with the
    calibrated run-to-run term, docs/timing_protocol.md) contains 1. With a 1% term it did not on an H100 (0.925x,
    [0.871, 0.984]): consecutive runs of a 256 MiB ReLU moved by 7.5%, within what the term was calibrated on."""
    import torch

    from tritonrl.verify.shared import timing_protocol
    from tritonrl.verify.shared.timing_stats import RUN_TO_RUN_REL

    model = _load(GOOD).ModelNew()
    first, _ = _checked(model, seed=1)
    second, _ = _checked(model, seed=2)
    point, low, high = timing_protocol.speedup_interval(first["samples_ms"], second["samples_ms"],
                                               systematic_rel=RUN_TO_RUN_REL)
    assert low <= point <= high and low < 1.0 < high, (point, low, high)
    ref = lambda x: torch.relu(x)  # noqa: E731 - the reference, timed the same way
    ref_stats, _ = _checked(ref, seed=3)
    point, low, high = timing_protocol.speedup_interval(ref_stats["samples_ms"], first["samples_ms"])
    assert 0.5 < point < 2.0 and low <= point <= high


def test_side_stream_work_that_skips_the_wait_is_counted():
    """A slow kernel on a side stream that never waits for the current stream, returned from early: the region's
    device-wide sync counts it (the same kernel on the current stream is the yardstick). The flush before the
    start event is not waited for, so such work could overlap it; for a ~2 ms kernel nothing measurable is
    hidden (benchmarks/probes/timing_policy.py)."""
    import torch

    from tritonrl.verify.shared import timing_protocol

    module = _load(HERE / "runtime" / "side_stream_early_return.py")
    side = torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    grid = (x.numel() // 1024,)

    def launch():
        module.slow_relu_kernel[grid](x, out, x.numel(), REPEAT=2000, BLOCK=1024)

    def on_side():
        with torch.cuda.stream(side):  # no wait_stream
            launch()

    launch()
    torch.cuda.synchronize()
    timer = timing_protocol.CudaTimer()
    medians = {name: statistics.median(timer(fn)[0] for _ in range(30)) for name, fn in
               (("current", launch), ("side", on_side))}
    timer.close()
    print("slow kernel, median ms on the current stream and on a side stream without wait:", medians)
    assert medians["side"] >= 0.95 * medians["current"], medians


# ------------------------------------------------------------------ through the Verifier (after the wiring)
@pytest.fixture(scope="module")
def verifier_results(tmp_path_factory):
    config = VerifyConfig(static_checks=False, cache_dir=str(tmp_path_factory.mktemp("gpu_timing")), **GPU_CONFIG)
    paths = [*FIXTURES, GOOD]
    items = [VerifyItem(resized(TASKS[header(p, "task")], **BIG), code=p.read_text()) for p in paths]
    with Verifier(config) as verifier:
        return {p.name: r for p, r in zip(paths, verifier.verify_many(items))}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_verifier_rejects_timing_cheat(path, verifier_results):
    result = verifier_results[path.name]
    assert not result.correct or Flag.TIMING_MISMATCH.value in result.flags, (
        f"{path.name} credited: speedup {result.speedup}, flags {result.flags}, timing {result.timing}")


def test_verifier_honest_kernel_has_a_speedup_interval(verifier_results):
    result = verifier_results[GOOD.name]
    assert result.correct and Flag.TIMING_MISMATCH.value not in result.flags, (result.flags, result.error)
    low, high = result.timing["speedup_ci95"]
    assert low <= result.speedup <= high
    assert result.timing["candidate"]["trials"] >= 10
    assert "median_ci_ms" in result.timing["candidate"] and "median_ci_ms" in result.timing["reference"]


# ------------------------------------------------------------------ the timer owns the device (issue 38)
def test_monitor_refuses_side_stream_work_and_sees_a_captured_graph(request):
    """Work on another stream than the forward's (it could run inside the timer's hold, before the start event)
    is ``unowned`` in correctness and timed calls alike; a captured CUDA graph (replays no hook sees) leaves a
    private memory pool that ``graph_problem`` reports."""
    import torch

    from tritonrl.verify.child.harness import poison_memory, unpoison_memory
    from tritonrl.verify.child.monitor import Monitor
    from tritonrl.verify.child.rules import judge_record
    from tritonrl.verify.child.streams import graph_problem

    module = _load(GOOD)
    monitor = Monitor(str(GOOD))
    monitor.install()
    poison_memory("cuda")  # as the child's correctness phase: fresh memory is NaN, so a kernel's 0.0 is a change
    request.addfinalizer(unpoison_memory)
    model, side = module.ModelNew(), torch.cuda.Stream()
    x = torch.randn(1 << 20, device="cuda")

    class OnSide(torch.nn.Module):
        def forward(self, x):
            with torch.cuda.stream(side):  # no wait_stream: what the red team's kernel did
                return model(x)

    out, record = monitor.run_forward(model, [x])
    assert record.unowned is None and judge_record(record, out, monitor.intact()) is None
    for coarse in (False, True):
        out, record = monitor.run_forward(OnSide(), [x], coarse=coarse)
        assert judge_record(record, out, monitor.intact(), weak=coarse)[0] == "threads", record.unowned
    torch.cuda.synchronize()
    assert graph_problem() is None
    graph, a = torch.cuda.CUDAGraph(), torch.zeros(64, 64, device="cuda")
    c = torch.empty_like(a)
    torch.mm(a, a, out=c)  # cuBLAS makes its handle and workspace outside the capture (cudaMalloc may not run in one)
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        torch.mm(a, a, out=c)
    assert graph_problem() is not None
