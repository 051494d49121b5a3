"""The timing protocol's CPU-checkable parts: statistics, bound timers, the reward switch, the timing fixtures'
static rejection. The measurements themselves need a GPU: ``tests/verify/test_gpu.py``."""

import statistics
from pathlib import Path

import pytest
import torch

from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.reward import compute_reward
from tritonrl.verify import Flag, Stage, VerifyResult, timing
from tritonrl.verify.static import run_static_checks
from tritonrl.verify.trial import TrialSpec
from tritonrl.verify.verifier import reference_timing_key, timing_summary

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"


def test_summarize_reports_median_trimmed_mean_and_spread():
    times = [1.0 + 0.01 * k for k in range(19)] + [50.0]  # one outlier, as a GC pause or a context switch gives
    stats = timing.summarize(times)
    assert stats["median_ms"] == pytest.approx(statistics.median(times))
    assert stats["trimmed_mean_ms"] == pytest.approx(statistics.fmean(sorted(times)[2:-2]))
    assert stats["trimmed_mean_ms"] < 1.2 < stats["mean_ms"]  # the outlier moves the mean, not the trimmed mean
    assert stats["p10_ms"] < stats["median_ms"] < stats["p90_ms"] <= stats["max_ms"] == 50.0
    assert stats["cv"] == pytest.approx(stats["std_ms"] / stats["mean_ms"])
    assert stats["trials"] == 20


def test_summarize_of_one_trial_has_no_spread():
    stats = timing.summarize([2.5])
    assert stats["median_ms"] == stats["p10_ms"] == stats["p90_ms"] == 2.5 and stats["std_ms"] == 0.0


def test_timers_are_bound_before_candidate_code(monkeypatch):
    """What a candidate replaces after import (module or class attributes) is not what timing calls."""
    original_record, original_elapsed = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
    monkeypatch.setattr(torch.cuda, "Event", object)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: None)
    assert timing._Event is not object and timing._synchronize is not torch.cuda.synchronize
    assert timing._event_record is original_record and timing._event_elapsed is original_elapsed
    assert timing._current_stream is not torch.cuda.current_stream


@pytest.mark.parametrize(("withhold", "bonus"), [(True, False), (False, True)])
def test_reward_switch_for_suspicious_speedups(withhold, bonus):
    result = VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                          speedup=50.0, flags=[Flag.SUSPICIOUS_SPEEDUP.value], timing={"speedup_ci95": [45.0, 55.0]})
    config = RewardConfig(withhold_suspicious_speedup=withhold)
    expected = 1.0 + (config.speedup_weight if bonus else 0.0)
    assert compute_reward(result, config) == pytest.approx(expected)
    assert compute_reward(result, RewardConfig(preset="staged", withhold_suspicious_speedup=withhold)) == (
        pytest.approx(1.0 if bonus else 0.7))


@pytest.mark.parametrize(("name", "flag"), [("side_stream_early_return.py", Flag.THREADS),
                                            ("timer_patch.py", Flag.TAMPERING)])
def test_timing_hacks_are_rejected_statically(name, flag):
    flags = {v.flag for v in run_static_checks((RUNTIME / name).read_text())}
    assert flag in flags


def test_reference_timing_key_depends_on_gpu_and_protocol():
    trial = TrialSpec("full0", "full", "bundled/t@base:0", "src", 42)
    base = reference_timing_key(trial, "NVIDIA H100", VerifyConfig())
    assert base != reference_timing_key(trial, "NVIDIA H200", VerifyConfig())
    assert base != reference_timing_key(trial, "NVIDIA H100", VerifyConfig(timed_trials=50))
    assert base != reference_timing_key(trial, "NVIDIA H100", VerifyConfig(compile_baseline=True))


def test_timing_summary_reports_both_sides_and_a_missing_reference():
    stats = timing.summarize([1.0, 1.1, 0.9])
    status = {"timing": stats, "device": {"gpu": "G", "sm_clock_mhz": 1980, "mem_clock_mhz": 2619,
                                          "trials_peak_memory_bytes": 123}}
    summary = timing_summary(status, {"ok": True, "reference": stats, "compile": stats}, ref_cached=True)
    assert summary["gpu"] == "G" and summary["ref_median_ms"] == stats["median_ms"]
    assert summary["ref_compile_ms"] == stats["median_ms"] and summary["peak_memory_bytes"] == 123
    assert "reference_error" in timing_summary(status, {"ok": False, "error": "boom"}, ref_cached=False)


# ---------------------------------------------------------------- adaptive, output-checked timing (CPU, fake clock)
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402

from tritonrl.verify.harness import poison_memory, unpoison_memory  # noqa: E402
from tritonrl.verify.timing_stats import (  # noqa: E402
    RUN_TO_RUN_REL,
    ci_converged,
    estimates_agree,
    median_ci,
    median_ci_ranks,
    speedup_interval,
    widen,
)

GPU_TIMING = Path(__file__).parent / "fixtures" / "gpu_timing"


class FakeClock:
    def __init__(self) -> None:
        self.now_ms = 0.0

    def advance(self, ms: float) -> None:
        self.now_ms += ms


class FakeTimer:
    """The Timer protocol on a fake clock: a call's time is what the candidate advanced, plus a fixed protocol
    overhead and optional relative gaussian noise (seeded)."""

    flush_bytes = 0

    def __init__(self, clock: FakeClock, overhead_ms: float = 0.01, noise_rel: float = 0.0, seed: int = 0,
                 default_ms: float = 1.0) -> None:
        self.clock, self.overhead_ms, self.noise_rel = clock, overhead_ms, noise_rel
        self.rng = random.Random(seed)
        self.default_ms = default_ms  # for calls that do not advance the clock (real fixtures)
        self.syncs = 0
        self.calls = 0

    def __call__(self, fn):
        start = self.clock.now_ms
        result = fn()
        spent = self.clock.now_ms - start
        if spent == 0 and fn is not timing._nothing:
            spent = self.default_ms
        self.calls += 1
        return (spent * (1 + self.noise_rel * self.rng.gauss(0, 1)) + self.overhead_ms), result

    def sync(self) -> None:
        self.syncs += 1


class Honest:
    def __init__(self, clock, cost_ms=1.0):
        self.clock, self.cost_ms = clock, cost_ms

    def __call__(self, x):
        self.clock.advance(self.cost_ms)
        return torch.relu(x)


class MemoByPtr(Honest):
    """Remembers the answer per data_ptr (the 155x / 6.7x class)."""

    def __init__(self, clock):
        super().__init__(clock)
        self.memo = {}

    def __call__(self, x):
        key = x.data_ptr()
        if key not in self.memo:
            self.memo[key] = super().__call__(x)
        self.clock.advance(0.001)
        return self.memo[key]


class WarmShortcut(Honest):
    """Full work for the first calls, then updates a ninth of its persistent buffer (a capped ~9x)."""

    def __init__(self, clock):
        super().__init__(clock)
        self.calls, self.out = 0, None

    def __call__(self, x):
        self.calls += 1
        if self.out is None:
            self.out = torch.empty_like(x)
        if self.calls <= 3:
            self.out.copy_(super().__call__(x))
        else:
            part = x.numel() // 9
            self.out[:part] = torch.relu(x[:part])
            self.clock.advance(self.cost_ms / 9)
        return self.out


class FlagDetector(Honest):
    """Honest while the poisoning flags are on (correctness mode), replays its last answer when they are off."""

    def __init__(self, clock):
        super().__init__(clock)
        self.last = None

    def __call__(self, x):
        if torch.are_deterministic_algorithms_enabled() or self.last is None:
            self.last = super().__call__(x)
        self.clock.advance(0.001)
        return self.last


class ContentMemo(Honest):
    """Remembers answers by the input's values: the documented limit of a finite number of input sets."""

    def __init__(self, clock):
        super().__init__(clock)
        self.memo = {}

    def __call__(self, x):
        key = x[:4].tolist().__repr__()  # a few elements identify each of K sets
        if key not in self.memo:
            self.memo[key] = super().__call__(x).clone()
        self.clock.advance(0.001)
        return self.memo[key]


def _compare(actual, expected):
    if len(actual) != len(expected) or any(type(a) is not torch.Tensor for a in actual):
        return "not the expected tensors"
    bad = [i for i, (a, e) in enumerate(zip(actual, expected)) if not torch.allclose(a, e)]
    return f"output {bad[0]} differs" if bad else None


def _checked_run(candidate, seed=0, n_sets=4, policy=None, clock=None, timer=None, numel=4096):
    gen = torch.Generator().manual_seed(1234)
    sets = [[torch.randn(numel, generator=gen)] for _ in range(n_sets)]
    inputs = [torch.empty(numel)]
    refresh = timing.make_refresh(inputs, sets)
    refresh(0)
    timer = timer or FakeTimer(clock or candidate.clock)
    stats, captures = timing.time_checked(lambda: candidate(*inputs), timer=timer, policy=policy,
                                          refresh=refresh, n_sets=n_sets, seed=seed)
    packed = timing.pack_captures(captures)
    verdict = timing.judge_captures(packed, lambda k: [torch.relu(sets[k][0])], _compare)
    return stats, captures, verdict


def test_honest_candidate_is_clean_and_stops_at_the_minimum():
    for seed in range(10):
        clock = FakeClock()
        stats, captures, verdict = _checked_run(Honest(clock), seed=seed)
        assert verdict is None
        assert stats["trials"] in (10, 11) and stats["stopped"] == "ci"  # 11: the extra call on another set
        assert stats["median_ms"] == pytest.approx(1.0) and stats["overhead_ms"] == pytest.approx(0.01)
        assert stats["raw_median_ms"] == pytest.approx(1.01) and stats["warmup"] == 2
        assert captures[-1].iteration == stats["trials"] - 1  # the last call is always checked
        assert 2 <= len(captures) <= timing.TimingPolicy().checks + 1
        assert len({c.input_set for c in captures}) >= 2
        json.dumps(stats)  # goes into a step file as is


@pytest.mark.parametrize("cheat", [MemoByPtr, WarmShortcut, FlagDetector], ids=lambda c: c.__name__)
def test_cheats_are_caught_by_the_captured_outputs(cheat):
    """For every seed (capture positions, set order): the captured outputs expose the cheat."""
    for seed in range(25):
        clock = FakeClock()
        candidate = cheat(clock)
        torch.use_deterministic_algorithms(True, warn_only=True)  # "correctness mode": one honest call
        try:
            candidate(torch.randn(4096))
        finally:
            torch.use_deterministic_algorithms(False)
        stats, _, verdict = _checked_run(candidate, seed=seed)
        assert verdict is not None and "timed call" in verdict, (cheat.__name__, seed, stats["checked"])


def test_without_refresh_the_same_cheats_pass_unnoticed():
    """The old protocol's hole, for the record: same inputs every call, the replayed answer is right."""
    clock = FakeClock()
    candidate = MemoByPtr(clock)
    x = torch.randn(4096)
    stats, captures = timing.time_checked(lambda: candidate(x), timer=FakeTimer(clock), seed=0)
    assert all(torch.equal(c.outputs[0], torch.relu(x)) for c in captures)
    assert stats["median_ms"] < 0.01  # the "speedup" it earned


def test_limit_values_keyed_cache_over_k_sets_is_not_caught():
    """Documented limit (docs/timing.md): an answer remembered per input *values* is right for each of K sets."""
    clock = FakeClock()
    candidate = ContentMemo(clock)
    stats, _, verdict = _checked_run(candidate, seed=3)
    assert verdict is None and stats["median_ms"] < 0.01


def test_refresh_keeps_the_tensors_and_never_repeats_a_set():
    seen = []
    gen = torch.Generator().manual_seed(0)
    sets = [[torch.randn(8, generator=gen), 3] for _ in range(3)]
    inputs = [torch.empty(8), 3]
    ptr = inputs[0].data_ptr()
    refresh = timing.make_refresh(inputs, sets)

    def recording(k):
        seen.append(k)
        refresh(k)
        assert torch.equal(inputs[0], sets[k][0]) and inputs[0].data_ptr() == ptr

    clock = FakeClock()
    candidate = Honest(clock)
    timing.time_checked(lambda: candidate(inputs[0]), timer=FakeTimer(clock), refresh=recording, n_sets=3, seed=5)
    assert all(a != b for a, b in zip(seen, seen[1:])) and set(seen) == {0, 1, 2}
    with pytest.raises(ValueError):
        timing.make_refresh(inputs, [[torch.empty(9), 3]])
    with pytest.raises(ValueError):
        timing.make_refresh(inputs, [[torch.empty(8), 4]])
    with pytest.raises(ValueError):
        timing.time_checked(lambda: None, timer=FakeTimer(clock), refresh=recording, n_sets=1)


def test_capture_positions_depend_on_the_secret_seed():
    positions = set()
    for seed in range(8):
        clock = FakeClock()
        stats, captures, _ = _checked_run(Honest(clock), seed=seed)
        positions.add(tuple(c.iteration for c in captures))
    assert len(positions) > 1


def test_extra_call_when_every_capture_ran_on_one_set():
    """n_sets=2 with a policy of one capture: the stop is followed by one more call on the other set."""
    clock = FakeClock()
    policy = timing.TimingPolicy(checks=1, min_trials=6)
    stats, captures, verdict = _checked_run(Honest(clock), seed=1, n_sets=2, policy=policy)
    assert verdict is None and {c.input_set for c in captures} == {0, 1}
    assert stats["trials"] == 7 and len(captures) == 2 and stats["stopped"] == "ci"


def test_capture_none_captures_nothing_as_for_the_reference():
    clock = FakeClock()
    candidate = Honest(clock)
    x = torch.randn(16)
    stats, captures = timing.time_checked(lambda: candidate(x), timer=FakeTimer(clock), capture=None)
    assert captures == [] and stats["checked"] == [] and stats["trials"] == 10


def test_adaptive_warmup_waits_for_two_agreeing_runs():
    clock = FakeClock()
    costs = iter([80.0, 5.0] + [1.0] * 1000)  # JIT compile, autotune, then steady

    def call():
        clock.advance(next(costs))

    stats, _ = timing.time_checked(call, timer=FakeTimer(clock), capture=None)
    assert stats["warmup"] == 4 and stats["median_ms"] == pytest.approx(1.0)

    flip = iter([1.0, 2.0] * 1000)  # never settles: capped

    def unsettled():
        clock.advance(next(flip))

    stats, _ = timing.time_checked(unsettled, timer=FakeTimer(clock), capture=None,
                                   policy=timing.TimingPolicy(max_warmup=6, max_trials=20))
    assert stats["warmup"] == 6 and stats["stopped"] == "max_trials" and stats["trials"] == 20


def test_noisy_timings_run_until_the_interval_is_narrow_or_the_budget_is_spent():
    clock = FakeClock()
    candidate = Honest(clock, cost_ms=1.0)
    x = torch.randn(16)
    quiet = FakeTimer(clock, noise_rel=0.002, seed=1)
    stats, _ = timing.time_checked(lambda: candidate(x), timer=quiet, capture=None)
    assert stats["stopped"] == "ci" and stats["trials"] == 10 and stats["ci_rel"] <= 0.01
    noisy = FakeTimer(clock, noise_rel=0.05, seed=2)
    stats, _ = timing.time_checked(lambda: candidate(x), timer=noisy, capture=None,
                                   policy=timing.TimingPolicy(max_trials=500, budget_ms=10_000))
    assert stats["stopped"] == "ci" and 40 < stats["trials"] < 500, stats["trials"]
    low, high = stats["median_ci_ms"]
    assert low <= stats["median_ms"] <= high and stats["ci_rel"] <= 0.01 and stats["ci_coverage"] >= 0.95
    budget = timing.TimingPolicy(budget_ms=30.0, max_trials=1000, rel_ci=0.001)
    stats, _ = timing.time_checked(lambda: candidate(x), timer=FakeTimer(clock, noise_rel=0.05, seed=3),
                                   capture=None, policy=budget)
    assert stats["stopped"] == "budget" and 28 <= stats["trials"] <= 31 and stats["timed_ms"] >= 30.0


def test_policy_round_trips_and_rejects_nonsense():
    policy = timing.TimingPolicy(rel_ci=0.02, max_trials=50)
    assert timing.TimingPolicy.from_dict({**policy.as_dict(), "unknown": 1}) == policy
    assert policy.key() != timing.TimingPolicy().key()
    with pytest.raises(ValueError):
        timing.TimingPolicy(min_trials=20, max_trials=10)
    with pytest.raises(ValueError):
        timing.TimingPolicy(confidence=1.5)


def test_judge_captures_requires_captures():
    assert timing.judge_captures({}, lambda k: [], _compare) == "the timed calls' outputs were not captured"
    packed = {"iterations": [3], "input_sets": [0], "outputs": [["torch.Fake"]]}
    assert "timed call 3 (input set 0)" in timing.judge_captures(packed, lambda k: [torch.zeros(1)], _compare)
    assert timing.judge_captures([1, 2], lambda k: [], _compare) == "the timed calls' outputs were not captured"
    tampered = {"iterations": [0], "input_sets": [7], "outputs": [[torch.zeros(1)]]}
    assert "unknown input set 7" in timing.judge_captures(tampered, lambda k: [[torch.zeros(1)]][k], _compare)


def test_clone_outputs_copies_plain_tensors_and_names_the_rest():
    class Sub(torch.Tensor):
        pass

    t = torch.ones(3)
    cloned = timing.clone_outputs((t, torch.ones(2).as_subclass(Sub), 7))
    t.zero_()
    assert torch.equal(cloned[0], torch.ones(3)) and cloned[1].endswith(".Sub") and cloned[2] == "builtins.int"


# ---------------------------------------------------------------- order-statistic interval of the median
def test_median_ci_ranks_match_the_binomial_tables():
    assert median_ci_ranks(10) == (2, 9, pytest.approx(0.978515625))
    lo, hi, coverage = median_ci_ranks(100)
    assert (lo, hi) == (40, 61) and 0.95 <= coverage < 0.97
    lo, hi, coverage = median_ci_ranks(5)  # no 95% interval exists below 6 samples
    assert (lo, hi) == (1, 5) and coverage == pytest.approx(1 - 2 / 32)
    assert not ci_converged([1.0] * 5, rel_ci=0.5)
    assert ci_converged([1.0] * 6, rel_ci=0.01)


def test_median_ci_covers_the_true_median():
    rng = random.Random(7)
    hits = 0
    for _ in range(400):
        samples = [rng.expovariate(1.0) for _ in range(30)]  # skewed, as timings are
        low, high, _ = median_ci(samples)
        hits += low <= math.log(2) <= high
    assert hits / 400 >= 0.93  # nominal coverage 95.7% at n=30


# ---------------------------------------------------------------- speedup interval
def _samples(center, spread, n, seed):
    rng = random.Random(seed)
    return [center * (1 + spread * rng.gauss(0, 1)) for _ in range(n)]


@pytest.mark.parametrize("method", ["bootstrap", "order"])
def test_speedup_interval_contains_one_for_identical_distributions(method):
    for seed in range(5):
        ref, cand = _samples(1.0, 0.03, 30, seed), _samples(1.0, 0.03, 30, seed + 100)
        point, low, high = speedup_interval(ref, cand, seed=seed, method=method)
        assert low <= point <= high and low < 1.0 < high


@pytest.mark.parametrize("method", ["bootstrap", "order"])
def test_speedup_interval_excludes_one_for_separated_distributions(method):
    ref, cand = _samples(1.3, 0.02, 30, 1), _samples(1.0, 0.02, 30, 2)
    point, low, high = speedup_interval(ref, cand, method=method)
    assert 1.0 < low <= point <= high and point == pytest.approx(1.3, rel=0.02)
    slower = speedup_interval(cand, ref, method=method)
    assert slower[2] < 1.0


def test_speedup_interval_is_deterministic_and_widened_by_systematic_error():
    ref, cand = _samples(2.0, 0.05, 20, 3), _samples(1.0, 0.05, 20, 4)
    assert speedup_interval(ref, cand, seed=9) == speedup_interval(ref, cand, seed=9)
    point, low, high = speedup_interval(ref, cand, seed=9)
    wide = speedup_interval(ref, cand, seed=9, systematic_rel=0.01)
    assert wide == (point, pytest.approx(low / 1.01), pytest.approx(high * 1.01))
    assert speedup_interval([1.0, 1.0], [0.0, 0.0])[0] == math.inf
    with pytest.raises(ValueError):
        speedup_interval([], [1.0])


def test_estimates_agree_by_root_sum_square_of_log_half_widths():
    tight = (0.99, 1.01)
    assert estimates_agree(1.0, tight, 1.0, tight)
    assert not estimates_agree(1.0, tight, 1.15, (1.15 * 0.99, 1.15 * 1.01))  # 15% apart, 1% intervals
    # The same two figures, each interval widened by the run-to-run term: one quantity measured twice.
    assert estimates_agree(1.0, widen(*tight), 1.12, widen(1.12 * 0.99, 1.12 * 1.01))
    assert widen(1.0, 2.0, 0.1) == (pytest.approx(1.0 / 1.1), pytest.approx(2.2))
    assert widen(1.0, 2.0) == widen(1.0, 2.0, RUN_TO_RUN_REL)
    # Overlapping intervals are not enough: 18% apart with 10% half-widths overlap but do not agree.
    h = math.log(1.1)
    assert not estimates_agree(1.0, (1 / 1.1, 1.1), math.exp(0.18), (math.exp(0.18 - h), math.exp(0.18 + h)))
    # An asymmetric interval counts by its larger side, whichever side the other estimate lies on.
    assert estimates_agree(1.0, (0.7, 1.01), 1.2, (1.19, 1.21))
    with pytest.raises(ValueError):
        estimates_agree(0.0, tight, 1.0, tight)


# ---------------------------------------------------------------- GPU-timing fixtures, their CPU side
def _fixture_header(path, key):
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


GPU_TIMING_FIXTURES = sorted(GPU_TIMING.glob("*.py"))


def test_gpu_timing_fixtures_have_headers():
    from tests.verify.tasks import TASKS

    assert len(GPU_TIMING_FIXTURES) >= 5
    for path in GPU_TIMING_FIXTURES:
        assert _fixture_header(path, "expect") and _fixture_header(path, "why"), path.name
        assert _fixture_header(path, "task") in TASKS, path.name


@pytest.mark.parametrize("path", GPU_TIMING_FIXTURES, ids=lambda p: p.stem)
def test_gpu_timing_fixture_is_caught_by_checked_timing_under_the_interpreter(path):
    """Each fixture, as the harness would run it (interpreter, fake clock): one correctness-mode call with the
    poisoning flags on, then checked timing with them off. The GPU-only cheat (side stream) is honest here."""
    spec = importlib.util.spec_from_file_location(f"gpu_timing_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    saved = torch.utils.deterministic.fill_uninitialized_memory
    try:
        poison_memory("cpu")  # the harness's correctness mode
        x = torch.randn(4, 1024)
        assert torch.equal(module.ModelNew()(x), torch.relu(x))  # correctness mode: right
        unpoison_memory()  # the harness's timing mode (both flags off)
        _time_fixture_and_judge(module, path)
    finally:
        torch.use_deterministic_algorithms(False)
        torch.utils.deterministic.fill_uninitialized_memory = saved


def _time_fixture_and_judge(module, path):
    model = module.ModelNew()
    gen = torch.Generator().manual_seed(0)
    sets = [[torch.randn(4, 1024, generator=gen)] for _ in range(3)]
    inputs = [torch.empty(4, 1024)]
    refresh = timing.make_refresh(inputs, sets)
    policy = timing.TimingPolicy(min_trials=6, max_warmup=4)
    with torch.no_grad():
        stats, captures = timing.time_checked(lambda: model(*inputs), timer=FakeTimer(FakeClock()), policy=policy,
                                              refresh=refresh, n_sets=3, seed=0)
    verdict = timing.judge_captures(timing.pack_captures(captures), lambda k: [torch.relu(sets[k][0])], _compare)
    if "side_stream" in path.stem:
        assert verdict is None  # its cheat needs CUDA streams
    else:
        assert verdict is not None, f"{path.name}: {stats['checked']}"


def test_gpu_timing_fixtures_pass_every_correctness_check(runtime_verifier):
    """Static checks off, CPU: each fixture is correct in every correctness trial, so only the checked timing
    (on a GPU) can catch it; that is what makes them fixtures of the timing defence."""
    from tests.verify.tasks import TASKS
    from tritonrl.verify import VerifyItem

    items = [VerifyItem(TASKS[_fixture_header(p, "task")], code=p.read_text()) for p in GPU_TIMING_FIXTURES]
    for path, result in zip(GPU_TIMING_FIXTURES, runtime_verifier.verify_many(items)):
        assert result.correct, f"{path.name}: {result.flags} {result.error}"
