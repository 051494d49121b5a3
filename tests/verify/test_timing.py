"""The timing protocol's CPU-checkable parts: statistics, bound timers, the reward switch, the clock check, the
adaptive loop with every timed call checked (fake clock), the timing fixtures. The measurements themselves need a
GPU: ``tests/verify/test_gpu.py``."""

import statistics
from pathlib import Path

import pytest
import torch

from tritonrl.common.reward import compute_reward
from tritonrl.config import RewardConfig
from tritonrl.verify import Flag, Stage, VerifyResult
from tritonrl.verify.judge.timing_run import clock_check, report_timing
from tritonrl.verify.shared import timing_protocol
from tritonrl.verify.static import run_static_checks

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"


def test_summarize_reports_median_trimmed_mean_and_spread():
    times = [1.0 + 0.01 * k for k in range(19)] + [50.0]  # one outlier, as a GC pause or a context switch gives
    stats = timing_protocol.summarize(times)
    assert stats["median_ms"] == pytest.approx(statistics.median(times))
    assert stats["trimmed_mean_ms"] == pytest.approx(statistics.fmean(sorted(times)[2:-2]))
    assert stats["trimmed_mean_ms"] < 1.2 < stats["mean_ms"]  # the outlier moves the mean, not the trimmed mean
    assert stats["p10_ms"] < stats["median_ms"] < stats["p90_ms"] <= stats["max_ms"] == 50.0
    assert stats["cv"] == pytest.approx(stats["std_ms"] / stats["mean_ms"])
    assert stats["trials"] == 20


def test_summarize_of_one_trial_has_no_spread():
    stats = timing_protocol.summarize([2.5])
    assert stats["median_ms"] == stats["p10_ms"] == stats["p90_ms"] == 2.5 and stats["std_ms"] == 0.0


def test_timers_are_bound_before_candidate_code(monkeypatch):
    """What a candidate replaces after import (module or class attributes) is not what timing calls."""
    original_record, original_elapsed = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
    monkeypatch.setattr(torch.cuda, "Event", object)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: None)
    assert timing_protocol._Event is not object and timing_protocol._synchronize is not torch.cuda.synchronize
    assert timing_protocol._event_record is original_record and timing_protocol._event_elapsed is original_elapsed
    assert timing_protocol._current_stream is not torch.cuda.current_stream


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


def test_clock_check_bounds_the_childs_clock_by_the_judges_wall_clock():
    """Calibration: empty regions cost 0.08 ms more on the wall clock than on the child's. An honest 1 ms call shows
    the same gap; a clock that reports a third of a 1 ms call shows a gap 0.67 ms larger: no speed credit."""
    rng = random.Random(0)
    calibration = [(0.01, 0.09 + rng.uniform(-0.005, 0.005)) for _ in range(20)]
    honest = [0.08 + rng.uniform(-0.01, 0.01) for _ in range(30)]
    assert clock_check(calibration, honest, [1.0] * 30)["ok"]
    forged = [0.08 + 0.667 + rng.uniform(-0.01, 0.01) for _ in range(30)]
    check = clock_check(calibration, forged, [0.333] * 30)
    assert not check["ok"] and check["excess_ms"] == pytest.approx(0.667, abs=0.02)
    # Limit: under-reporting by less than the slack (50 us, or 10% of the call) is within the wall clock's noise.
    assert clock_check(calibration, [0.08 + 0.04] * 30, [0.2] * 30)["ok"]


def _reported(candidate_ms: list[float], reference_ms: list[float], clock_ok: bool):
    """What the judge reports of a finished timing run: (flags, timing facts)."""
    from types import SimpleNamespace

    session = SimpleNamespace(facts={"flags": [], "timing": {}})
    candidate = {"median_ms": statistics.median(candidate_ms), "samples_ms": candidate_ms,
                 "clock_check": {"ok": clock_ok}}
    reference = {"median_ms": statistics.median(reference_ms), "samples_ms": reference_ms}
    report_timing(session, candidate, {"ok": True, "reference": reference}, cached=False)
    return session.facts["flags"], session.facts["timing"]


def test_a_timing_the_judge_does_not_trust_or_resolve_gets_no_speedup_interval():
    """The speed reward reads the interval: a clock the judge's wall clock contradicts, or a median of 0 once the
    timer's cost is taken off (a ReLU of a few microseconds on an H100, either side), must not hand one out."""
    fast, slow = [0.5 + 0.01 * k for k in range(12)], [1.0 + 0.01 * k for k in range(12)]
    flags, facts = _reported(fast, slow, clock_ok=True)
    assert not flags and facts["speedup_ci95"][0] > 1.5
    flags, facts = _reported(fast, slow, clock_ok=False)
    assert flags == ["timing_untrusted"] and "speedup_ci95" not in facts
    flags, facts = _reported([0.0] * 7 + [0.002] * 5, [0.0027] * 12, clock_ok=True)
    assert flags == ["timing_unresolved"] and "speedup_ci95" not in facts
    flags, facts = _reported([0.019] * 12, [0.0] * 12, clock_ok=True)
    assert flags == ["timing_unresolved"] and "speedup_ci95" not in facts


# ---------------------------------------------------------------- adaptive timing, every call checked (CPU, fake clock)
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402

import numpy as np  # noqa: E402

from tritonrl.verify.child.harness import poison_memory, unpoison_memory  # noqa: E402
from tritonrl.verify.shared.timing_stats import (  # noqa: E402
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
        if spent == 0 and fn is not timing_protocol._nothing:
            spent = self.default_ms
        self.calls += 1
        return (spent * (1 + self.noise_rel * self.rng.gauss(0, 1)) + self.overhead_ms), result

    def sync(self) -> None:
        self.syncs += 1

    def learn(self) -> None:
        self.learned = getattr(self, "learned", 0) + 1


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


class RandomSkip(Honest):
    """Does the work on most calls; on a random fifth it returns its previous answer (a ~20% "speedup")."""

    def __init__(self, clock, seed=0):
        super().__init__(clock)
        self.rng, self.last = random.Random(seed), None

    def __call__(self, x):
        if self.last is None or self.rng.random() > 0.2:
            self.last = super().__call__(x)
        else:
            self.clock.advance(0.001)
        return self.last


def _checked_run(candidate, policy=None, clock=None, timer=None, numel=4096, seed=0):
    """The judge's loop, in miniature: every timed call gets inputs never seen before and its output is checked
    (``tritonrl.verify.judge.session.Session.candidate_timing`` does this through the child and the arena)."""
    gen = torch.Generator().manual_seed(1234 + seed)
    timer = timer or FakeTimer(clock or candidate.clock)
    calls = [0]
    x = torch.empty(numel)  # one tensor, new values every call: as the judge's arena slot

    def call(warm):
        x.normal_(generator=gen)
        elapsed, out = timer(lambda: candidate(x))
        if not warm:
            calls[0] += 1
            if not torch.allclose(out, torch.relu(x)):
                raise timing_protocol.TimedCallRejected(f"timed call {calls[0]}: output 0 differs")
        return elapsed

    return timing_protocol.time_calls(call, policy=policy, overhead=lambda: timer(timing_protocol._nothing)[0])


def test_honest_candidate_is_clean_and_stops_at_the_minimum():
    clock = FakeClock()
    stats = _checked_run(Honest(clock))
    assert stats["trials"] == 10 and stats["stopped"] == "ci"
    assert stats["median_ms"] == pytest.approx(1.0) and stats["overhead_ms"] == pytest.approx(0.01)
    assert stats["raw_median_ms"] == pytest.approx(1.01) and stats["warmup"] == 2
    json.dumps(stats)  # goes into the verdict's facts as is


@pytest.mark.parametrize("cheat", [MemoByPtr, WarmShortcut, FlagDetector, RandomSkip], ids=lambda c: c.__name__)
def test_cheats_are_caught_because_every_timed_call_is_checked_on_fresh_inputs(cheat):
    """Remembering answers (by tensor, by data_ptr), doing less once warm, detecting the timing mode, skipping work
    on a random fraction of calls: each returns a wrong output on some timed call."""
    for seed in range(10):
        clock = FakeClock()
        candidate = cheat(clock)
        torch.use_deterministic_algorithms(True, warn_only=True)  # "correctness mode": one honest call
        try:
            candidate(torch.randn(4096))
        finally:
            torch.use_deterministic_algorithms(False)
        with pytest.raises(timing_protocol.TimedCallRejected, match="timed call"):
            _checked_run(candidate, seed=seed, policy=timing_protocol.TimingPolicy(min_trials=30, max_trials=60))


def test_a_cache_keyed_by_input_values_never_hits_fresh_inputs():
    """The old protocol rotated through a few input sets, so answers remembered per set's values were right (its
    documented limit). Fresh inputs every call: such a cache never hits, and the timing is the honest one."""
    clock = FakeClock()
    candidate = ContentMemo(clock)
    stats = _checked_run(candidate)
    assert stats["median_ms"] == pytest.approx(1.0, rel=0.01) and len(candidate.memo) >= stats["trials"]


def test_with_the_same_inputs_every_call_the_cheats_pass_unnoticed():
    """The old protocol's hole, for the record: same inputs every call, the replayed answer is right."""
    clock = FakeClock()
    candidate = MemoByPtr(clock)
    x = torch.randn(4096)
    timer = FakeTimer(clock)
    stats = timing_protocol.time_calls(lambda warm: timer(lambda: candidate(x))[0], overhead=lambda: timer(timing_protocol._nothing)[0])
    assert stats["median_ms"] < 0.01  # the "speedup" it earned


def test_adaptive_warmup_waits_for_two_agreeing_runs():
    clock = FakeClock()
    costs = iter([80.0, 5.0] + [1.0] * 1000)  # JIT compile, autotune, then steady
    timer = FakeTimer(clock)

    def call(warm):
        return timer(lambda: clock.advance(next(costs)))[0]

    stats = timing_protocol.time_calls(call, overhead=lambda: timer(timing_protocol._nothing)[0])
    assert stats["warmup"] == 4 and stats["median_ms"] == pytest.approx(1.0)

    flip = iter([1.0, 2.0] * 1000)  # never settles: capped

    def unsettled(warm):
        return timer(lambda: clock.advance(next(flip)))[0]

    stats = timing_protocol.time_calls(unsettled, overhead=lambda: timer(timing_protocol._nothing)[0],
                              policy=timing_protocol.TimingPolicy(max_warmup=6, max_trials=20))
    assert stats["warmup"] == 6 and stats["stopped"] == "max_trials" and stats["trials"] == 20


def test_noisy_timings_run_until_the_interval_is_narrow_or_the_budget_is_spent():
    clock = FakeClock()
    candidate = Honest(clock, cost_ms=1.0)
    x = torch.randn(16)

    def run(timer, policy=None):
        return timing_protocol.time_calls(lambda warm: timer(lambda: candidate(x))[0], policy=policy,
                                 overhead=lambda: timer(timing_protocol._nothing)[0])

    stats = run(FakeTimer(clock, noise_rel=0.002, seed=1))
    assert stats["stopped"] == "ci" and stats["trials"] == 10 and stats["ci_rel"] <= 0.01
    stats = run(FakeTimer(clock, noise_rel=0.05, seed=2), timing_protocol.TimingPolicy(max_trials=500, budget_ms=10_000))
    assert stats["stopped"] == "ci" and 40 < stats["trials"] < 500, stats["trials"]
    low, high = stats["median_ci_ms"]
    assert low <= stats["median_ms"] <= high and stats["ci_rel"] <= 0.01 and stats["ci_coverage"] >= 0.95
    stats = run(FakeTimer(clock, noise_rel=0.05, seed=3), timing_protocol.TimingPolicy(budget_ms=30.0, max_trials=1000,
                                                                              rel_ci=0.001))
    assert stats["stopped"] == "budget" and 28 <= stats["trials"] <= 31 and stats["timed_ms"] >= 30.0


def test_policy_round_trips_and_rejects_nonsense():
    policy = timing_protocol.TimingPolicy(rel_ci=0.02, max_trials=50)
    assert timing_protocol.TimingPolicy.from_dict({**policy.as_dict(), "unknown": 1}) == policy
    assert policy.key() != timing_protocol.TimingPolicy().key()
    with pytest.raises(ValueError):
        timing_protocol.TimingPolicy(min_trials=20, max_trials=10)
    with pytest.raises(ValueError):
        timing_protocol.TimingPolicy(confidence=1.5)


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
    # a candidate whose median is 0 in some resamples: the infinite ratios stay infinite, never NaN
    point, low, high = speedup_interval([1.0] * 9, [0.0] * 5 + [1.0] * 4, seed=1)
    assert point == math.inf and high == math.inf and not math.isnan(low)


def _reference_quantile(ordered, q):
    """The hand-written quantile numpy replaced (issue 41): linear between closest ranks, infinities kept."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    if math.isinf(ordered[lo]) or math.isinf(ordered[hi]):
        return ordered[hi] if pos > lo else ordered[lo]
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@pytest.mark.parametrize("values", [
    [1.0], [0.5, 2.0], [3.0, 1.0, 2.0, 4.0], [0.9 + 0.001 * i for i in range(500)],
    [1.0, 2.0, math.inf, math.inf], [1.0, math.inf], [0.5, 1.0, math.inf], [math.inf] * 3,
    [random.Random(7).lognormvariate(0, 1) for _ in range(499)] + [math.inf] * 13,
])
def test_quantiles_equal_the_hand_written_interpolation(values):
    from tritonrl.verify.shared.timing_stats import _quantiles

    qs = [0.0, 0.025, 0.3, 0.5, 0.975, 1.0]
    ordered = sorted(values)
    got = _quantiles(np.array(values), qs)
    for q, value in zip(qs, got):  # numpy interpolates from the upper rank past the midpoint: equal to an ulp
        assert value == pytest.approx(_reference_quantile(ordered, q), rel=1e-15, abs=0), (q, value)


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
    policy = timing_protocol.TimingPolicy(min_trials=6, max_warmup=4)
    if "side_stream" in path.stem:
        with torch.no_grad():
            _checked_run(model, policy=policy, clock=FakeClock(), numel=4 * 1024)  # its cheat needs CUDA streams
        return
    with torch.no_grad(), pytest.raises(timing_protocol.TimedCallRejected):
        _checked_run(lambda x: model(x.view(4, 1024)).view(-1), policy=policy, clock=FakeClock(), numel=4 * 1024)


SHOWN_ON_SECOND_CALL = {"capped_speedup_9x", "data_ptr_memo", "warm_shortcut"}  # their headers say why


def test_gpu_timing_fixtures_pass_every_correctness_check(runtime_verifier):
    """Static checks off, CPU: each fixture is correct in every correctness trial, so only the checked timing
    (on a GPU) can catch it; that is what makes them fixtures of the timing defence. Three that go warm on a
    persistent buffer or a memo are caught before, by the first model's second call (state between calls)."""
    from tests.verify.tasks import TASKS
    from tritonrl.verify import VerifyItem

    items = [VerifyItem(TASKS[_fixture_header(p, "task")], code=p.read_text()) for p in GPU_TIMING_FIXTURES]
    for path, result in zip(GPU_TIMING_FIXTURES, runtime_verifier.verify_many(items)):
        if path.stem in SHOWN_ON_SECOND_CALL:
            assert not result.correct and "called a second time" in result.error, (path.name, result.error)
        else:
            assert result.correct, f"{path.name}: {result.flags} {result.error}"


def test_the_prefetch_budget_grants_what_is_left_and_takes_it_back():
    """Timing runs waiting for the GPU hold their fresh input sets within one budget per judge: the first asks and
    gets, a later one gets what is left (it makes the rest during its run), and a finished run gives back."""
    from tritonrl.verify.judge.timing_run import PREFETCH_CPU_BYTES, PrefetchBudget, planned_sets

    budget = PrefetchBudget(100)
    assert budget.take(60) == 60 and budget.take(60) == 40 and budget.take(10) == 0
    budget.give(60)
    assert budget.take(10) == 10 and budget.left == 50
    assert PrefetchBudget.for_device("cpu").left == PREFETCH_CPU_BYTES
    assert planned_sets(timing_protocol.TimingPolicy(min_trials=10)) == 10 + 2 + 2 + 10  # calls, watched, empty regions


def test_a_cuda_error_names_where_it_surfaced_in_the_verifier():
    """A device failure may be the verifier's own (an assert in a kernel of its watch), not the candidate's: its
    message keeps the first line of CUDA's text and names the verifier frames it surfaced in; other errors name
    only the candidate's lines."""
    from tritonrl.verify.child.harness import format_error

    def watch_step():
        raise RuntimeError("CUDA error: device-side assert triggered\nSearch for `cudaErrorAssert' in the docs\n...")

    try:
        watch_step()
    except RuntimeError as exc:
        text = format_error(exc)
    assert text.splitlines()[0] == "RuntimeError: CUDA error: device-side assert triggered"
    assert "(verifier) test_timing.py" in text and "in watch_step" in text and "Search for" not in text
    try:
        raise ValueError("a plain error")
    except ValueError as exc:
        assert format_error(exc) == "ValueError: a plain error"


def test_a_long_error_keeps_its_cause_at_the_end():
    """Triton's ``CompilationError`` prints the kernel's source first and the cause last: a long message keeps its
    start and its end (a GPU compile failure read only ``def row_kernel(...`` and the cut source before)."""
    from tritonrl.verify.child.harness import format_error

    source = "\n".join(f"    line_{i} = tl.load(x_ptr + {i})" for i in range(200))
    try:
        raise ValueError(f"at 9:28:\ndef kernel(x_ptr):\n{source}\nAuditRefusal('the cause')")
    except ValueError as exc:
        text = format_error(exc, limit=800)
    assert text.startswith("ValueError: at 9:28:\ndef kernel(x_ptr):") and text.endswith("AuditRefusal('the cause')")
    assert " ... " in text and len(text) <= 800



def test_the_hold_covers_the_warm_up_host_time_and_never_shrinks():
    """``CudaTimer.learn`` (no GPU needed for its arithmetic): ``HOLD_FACTOR`` times the longest host time seen,
    at most ``HOLD_MAX_MS``, never less than before within a run."""
    timer = object.__new__(timing_protocol.CudaTimer)
    timer.hold_ms, timer.host_ms = 0.0, 0.2
    timer.learn()
    assert timer.hold_ms == pytest.approx(timing_protocol.HOLD_FACTOR * 0.2)
    timer.host_ms = 5.0
    timer.learn()
    assert timer.hold_ms == timing_protocol.HOLD_MAX_MS
    timer.host_ms = 0.01
    timer.learn()
    assert timer.hold_ms == timing_protocol.HOLD_MAX_MS

def test_hold_facts_count_the_calls_whose_host_time_passed_the_hold():
    from tritonrl.verify.judge.timing_run import hold_facts

    assert hold_facts([]) is None
    facts = hold_facts([(0.1, 0.3, 0.01), (0.4, 0.3, 0.02), (0.2, 0.3, 2.0)])
    assert facts == {"hold_ms": 0.3, "host_median_ms": 0.2, "host_max_ms": 0.4, "over_hold": 1,
                     "tail_median_ms": 0.02, "tail_max_ms": 2.0, "tails_over": 1, "calls": 3}


@pytest.mark.parametrize(("flush_last", "order"), [
    (True, ["hold", "flush", "start", "forward", "stop", "sync", "end", "sync"]),
    (False, ["flush", "hold", "start", "forward", "stop", "sync", "end", "sync"]),
])
def test_the_region_starts_right_after_the_flush(monkeypatch, flush_last, order):
    """``CudaTimer``'s device work in order, its CUDA calls replaced by recorders (no GPU here): the hold first,
    then the L2 flush, then the start event, so the forward starts on a GPU that has just been busy, as under
    do_bench (``flush_last=False``, the order until b0817a5, is kept for probes)."""
    seen = []
    monkeypatch.setattr(timing_protocol, "_zero_", lambda t: seen.append("flush"))
    monkeypatch.setattr(timing_protocol, "_sleep_cycles", lambda cycles: seen.append("hold"))
    monkeypatch.setattr(timing_protocol, "_Event", lambda enable_timing: object())
    monkeypatch.setattr(timing_protocol, "_event_record", lambda event, stream: seen.append(
        "start" if "start" not in seen else "stop" if "stop" not in seen else "end"))
    monkeypatch.setattr(timing_protocol, "_synchronize", lambda: seen.append("sync"))
    monkeypatch.setattr(timing_protocol, "_event_elapsed", lambda start, end: 0.01)
    timer = _bare_timer(flush_last)
    assert timer(lambda: seen.append("forward")) == (0.01, None)
    assert seen == order
    timer.hold_ms, seen[:] = 0.0, []  # no hold yet (the first warm-up call): flush, start
    timer(lambda: None)
    assert seen[:2] == ["flush", "start"]


def _bare_timer(flush_last: bool = True) -> timing_protocol.CudaTimer:
    """A ``CudaTimer`` without a GPU: its CUDA calls are the test's to replace."""
    timer = object.__new__(timing_protocol.CudaTimer)
    timer.flush_last, timer._flush, timer._stream, timer._cycles_per_ms = flush_last, None, None, 2e6
    timer.hold_ms, timer.host_ms, timer.last_host_ms, timer.last_tail_ms, timer.tails_over = 1.0, 0.0, 0.0, 0.0, 0
    return timer


@pytest.mark.parametrize(("tail", "counted"), [(0.02, "stop"), (0.049, "stop"),
                                               (2.0, "end")])
def test_the_region_ends_at_its_stream_unless_the_device_was_busy_after_it(monkeypatch, tail, counted):
    """The region is start to ``stop`` (the call's stream done: a GPU interval, no host wake-up in it) while the
    device-wide ``end`` trails ``stop`` by at most ``TAIL_MS``; a longer tail is work on another stream still
    running after the call's, and then the region runs to ``end``: all of it counts."""
    events = iter(["start", "stop", "end"])
    monkeypatch.setattr(timing_protocol, "_zero_", lambda t: None)
    monkeypatch.setattr(timing_protocol, "_sleep_cycles", lambda cycles: None)
    monkeypatch.setattr(timing_protocol, "_Event", lambda enable_timing: next(events))
    monkeypatch.setattr(timing_protocol, "_event_record", lambda event, stream: None)
    monkeypatch.setattr(timing_protocol, "_synchronize", lambda: None)
    at = {"start": 0.0, "stop": 0.13, "end": 0.13 + tail}
    monkeypatch.setattr(timing_protocol, "_event_elapsed", lambda a, b: at[b] - at[a])
    timer = _bare_timer()
    ms, _ = timer(lambda: None)
    assert ms == pytest.approx(at[counted])
    assert timer.last_tail_ms == pytest.approx(tail)
    assert timer.tails_over == (counted == "end")
