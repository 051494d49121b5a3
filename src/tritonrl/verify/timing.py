"""Calibrated GPU timing of one forward pass: the protocol of ``docs/timing.md``.

    stats, captures = time_checked(call, timer=CudaTimer(), policy=TimingPolicy(),
                                   refresh=make_refresh(inputs, input_sets), n_sets=len(input_sets))
    stats["median_ms"], stats["median_ci_ms"], stats["trials"], stats["samples_ms"], ...
    save_atomic(pack_captures(captures), ...)     # the parent: judge_captures(...) -> timing_mismatch or None

``time_checked`` (adaptive, output-checked): the inputs' values are refreshed in place from one of K input
sets before every call (outside the timed region), the outputs of a few timed calls chosen at random (and of the
last) are cloned for the parent to compare with the reference's outputs for those sets; warm-up until two
consecutive runs agree; timed runs until the median's 95% interval is within ``rel_ci`` (or a budget, or a
maximum). ``time_forward`` is the older fixed-count protocol (``warmup`` + ``trials``).

Per timed call: ``warmup`` untimed runs (JIT compilation and autotuning happen here), then ``trials`` timed runs, each
preceded by a write of a buffer larger than any GPU's L2 (every trial starts cold); CUDA events around each trial,
with a device-wide synchronize *inside* the timed region, so work a candidate leaves running on another stream
is counted. The fixed cost of that synchronize (measured around an empty region in the same call) is subtracted. The candidate's child times the reference ``Model`` with the same
code, inputs and GPU (``tritonrl.verify.harness``), so the speedup compares like with like.

Every CUDA and timer function used here is bound when this module is imported, which the harness does before it
imports any candidate code: a candidate that later replaces ``torch.cuda.Event``, ``torch.cuda.synchronize`` or
``Event.elapsed_time`` (module or class attribute) does not change what is called here. On a CPU nothing is
timed: callers report ``None`` and the flag ``timing_unavailable`` instead of a number.
"""

from __future__ import annotations

import math
import os
import random
import secrets
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, NamedTuple, Protocol

import torch

from tritonrl.verify.timing_stats import ci_converged, median_ci, speedup_interval  # noqa: F401 - re-exported

L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2 (H100: 50 MiB), as KernelBench does
TRIM_FRACTION = 0.10                # trimmed mean drops this share of trials at each end
CLOCK_QUERY_TIMEOUT_S = 5.0

# Bound before candidate import (see the module docstring). Function objects, not attribute look-ups.
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_current_stream = torch.cuda.current_stream
_synchronize = getattr(torch._C, "_cuda_synchronize", None) or torch.cuda.synchronize  # whole current device
_empty = torch.empty
_zero_ = torch.Tensor.zero_
_device_name = torch.cuda.get_device_name
_max_memory_allocated = torch.cuda.max_memory_allocated
_run = subprocess.run
_perf_counter = time.perf_counter
_clone = torch.Tensor.clone
_detach = torch.Tensor.detach
_copy_ = torch.Tensor.copy_
_to = torch.Tensor.to
_no_grad = torch.no_grad
_Random = random.Random      # the capture positions' RNG: a candidate replacing random.Random later changes nothing
_randbits = secrets.randbits


def synchronize() -> None:
    """Wait for every stream of the current GPU (the bound function; safe after candidate import)."""
    _synchronize()


def time_forward(fn: Callable[[], Any], warmup: int, trials: int,
                 flush_bytes: int = L2_FLUSH_BYTES) -> dict[str, Any]:
    """Statistics (``summarize``) of ``trials`` timed calls of ``fn()`` on the current CUDA device (fixed counts).

    ``median_ms`` etc. are corrected for the fixed cost of the protocol itself (the device-wide synchronize
    inside the region and the end event's launch), measured the same way around an empty region in this call:
    ``overhead_ms``; the uncorrected median is ``raw_median_ms``. The adaptive, output-checked protocol is
    ``time_checked``.
    """
    timer = CudaTimer(flush_bytes)
    for _ in range(max(1, warmup)):  # at least one: compilation and autotuning never land in a trial
        fn()
    _synchronize()
    overhead_ms = statistics.median(_timed_trials(_nothing, timer, max(10, trials // 2)))
    raw = _timed_trials(fn, timer, max(1, trials))
    timer.close()
    stats = summarize([max(t - overhead_ms, 0.0) for t in raw])
    return {**stats, "raw_median_ms": statistics.median(raw), "overhead_ms": overhead_ms,
            "warmup": max(1, warmup), "l2_flush_bytes": flush_bytes}


class Timer(Protocol):
    """What ``time_checked`` needs of a timer (``CudaTimer`` on a GPU; a fake clock in the CPU tests)."""

    flush_bytes: int

    def __call__(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """Run ``fn()`` once inside the timed region; (elapsed ms, what ``fn`` returned)."""

    def sync(self) -> None:
        """Wait until every stream of the device is idle (outside any timed region)."""


class CudaTimer:
    """One timed region per call: cold L2, CUDA events on the current stream, device-wide sync inside the region.

    No synchronize between the L2 flush and the start event (as ``triton.testing.do_bench``): the host's launch
    cost overlaps the flush. Synchronizing there instead (as KernelBench's harness) was measured on an H100
    (``benchmarks/timing_policy.py``): it counts the host's launch latency, more for a Triton launch than for a
    torch op (0.228 vs 0.183 ms for a 256 MiB relu kernel), and widened the run-to-run spread of the medians; a
    2 ms kernel launched on a side stream without waiting for the current stream hid nothing in either region. Its limit: a short kernel on
    such a side stream may overlap the flush (at most its ~0.1 ms); the strict static check ``side_streams``
    rejects that code. ``docs/timing.md``.
    """

    def __init__(self, flush_bytes: int = L2_FLUSH_BYTES) -> None:
        self.flush_bytes = flush_bytes
        self._flush = _empty(max(1, flush_bytes // 4), dtype=torch.float32, device="cuda")
        self._stream = _current_stream()

    def __call__(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        _zero_(self._flush)  # evict the L2; no sync after it: the launch overlaps the flush
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _event_record(start, self._stream)
        result = fn()
        _synchronize()  # device-wide, before the end event: work left on side streams is inside the measurement
        _event_record(end, self._stream)
        _synchronize()
        return _event_elapsed(start, end), result

    def sync(self) -> None:
        _synchronize()

    def close(self) -> None:
        self._flush = None


class WallTimer:
    """Wall-clock timing on the CPU: a **test seam** only (``TRITONRL_TIMING_ON_CPU=1``), so the checked-timing
    path (refreshed inputs, captures, the parent's judgement) runs end to end without a GPU. Its figures are
    interpreter times, never reported as kernel speed by default: on a CPU timing is unavailable."""

    flush_bytes = 0

    def __call__(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        start = _perf_counter()
        result = fn()
        return (_perf_counter() - start) * 1000.0, result

    def sync(self) -> None:
        return None

    def close(self) -> None:
        return None


def make_timer(device: str) -> Timer:
    return CudaTimer() if device.startswith("cuda") else WallTimer()


def _timed_trials(fn: Callable[[], Any], timer: Timer, trials: int) -> list[float]:
    """One elapsed time per trial (results dropped at once)."""
    return [timer(fn)[0] for _ in range(trials)]


def _nothing() -> None:
    return None


# ------------------------------------------------------------------ adaptive, output-checked timing
@dataclass(frozen=True)
class TimingPolicy:
    """The adaptive protocol's knobs (``docs/timing.md``, "Adaptive protocol"); part of the reference cache key.

    Warm-up: at least ``warmup_ms`` of wall time (the GPU's clocks rise under sustained load, and the reference
    is timed first in a fresh child, perhaps after the GPU idled), then at least ``min_warmup`` (>= 1) runs and
    until two consecutive runs are within ``warmup_rel`` of each other (so at least 2), at most ``max_warmup``
    (once ``warmup_ms`` is reached; at most ``WARMUP_CAP`` runs in all). Timed runs: at least ``min_trials``; then stop as soon as the
    median's ``confidence`` interval (order statistics) is within ``rel_ci`` of the median, or ``budget_ms`` of
    timed GPU time is spent, or ``max_trials`` are done. Checks: the outputs of at most ``checks`` timed calls
    are captured: one at a random iteration among the first ``min_trials - 1``, each later one with probability
    ``check_rate`` (while captures remain), and always the last; if every capture so far ran on one input set,
    one more timed call (on another set) is made and captured, so there may be ``checks + 1`` captures and
    ``max_trials + 1`` timed calls.
    """

    min_warmup: int = 1
    max_warmup: int = 10
    warmup_rel: float = 0.05
    warmup_ms: float = 0.0
    min_trials: int = 10
    max_trials: int = 100
    rel_ci: float = 0.01
    confidence: float = 0.95
    budget_ms: float = 1000.0
    overhead_trials: int = 20
    checks: int = 4
    check_rate: float = 0.1

    def __post_init__(self) -> None:
        if not (1 <= self.min_warmup <= self.max_warmup and 1 <= self.min_trials <= self.max_trials):
            raise ValueError(f"bad warm-up or trial counts: {self}")
        if not (0 < self.confidence < 1 and self.rel_ci > 0 and self.budget_ms >= 0 and self.checks >= 1
                and self.warmup_ms >= 0):
            raise ValueError(f"bad timing policy: {self}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> TimingPolicy:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (values or {}).items() if k in names})

    def key(self) -> str:
        """A stable string for cache keys (a reference timed under another policy is another figure)."""
        return ",".join(f"{k}={v}" for k, v in sorted(self.as_dict().items()))


class Capture(NamedTuple):
    """The outputs of one timed call, cloned after its device-wide sync, and the input set it ran on."""

    iteration: int          # 0-based index among the timed calls (warm-up not counted)
    input_set: int | None   # index into the harness's input sets (None: no refresh)
    outputs: list           # ``capture(result)``; by default ``clone_outputs``: tensors cloned on their device


def clone_outputs(output: Any) -> list:
    """A call's outputs, kept: plain tensors detached and cloned on their device; anything else its type name.

    Uses functions bound before candidate import; a Tensor subclass is not cloned (its methods are the
    candidate's) but named, so the parent's comparison fails it as not a plain tensor.
    """
    values = tuple(output) if isinstance(output, (tuple, list)) else (output,)
    return [_clone(_detach(v)) if type(v) is torch.Tensor else f"{type(v).__module__}.{type(v).__qualname__}"
            for v in values]


def time_checked(call: Callable[[], Any], *, timer: Timer, policy: TimingPolicy | None = None,
                 refresh: Callable[[int], None] | None = None, n_sets: int = 0,
                 capture: Callable[[Any], Any] | None = clone_outputs,
                 seed: int | None = None, clock: Callable[[], float] = time.monotonic,
                 ) -> tuple[dict[str, Any], list[Capture]]:
    """Adaptive timing of ``call()`` with refreshed inputs and captured outputs: (statistics, captures).

    - ``call()``: one forward pass on the harness's input tensors (no_grad is the caller's); returns the outputs.
    - ``refresh(k)``: copy input set ``k`` (0 <= k < ``n_sets``) into those same tensors, in place (``make_refresh``).
      Called before every call, warm-up included, outside the timed region, then the device is synchronized; the
      set is drawn at random and never the previous call's, so an answer remembered for a tensor (its identity or
      ``data_ptr``) or for the previous call is stale. ``None``: the same inputs every call (no check possible).
    - ``capture(result)``: what to keep of a call's result (default ``clone_outputs``); ``None`` captures nothing
      (the reference's timing). Captured after the timed region's sync, then the device is synchronized again.
    - ``seed``: the capture iterations and set order; default from ``secrets`` (the candidate cannot know it).
    - ``timer``: ``CudaTimer`` on a GPU; ``clock``: wall time for ``wall_s`` only.

    The statistics are ``summarize``'s of the overhead-corrected trials plus ``raw_median_ms``, ``overhead_ms``,
    ``warmup`` (runs done), ``l2_flush_bytes``, ``median_ci_ms`` ([low, high]), ``ci_coverage`` (exact, of
    that interval), ``ci_rel`` (largest distance of an end from the median, relative; None if the median is 0), ``confidence``,
    ``stopped`` ("ci", "budget" or "max_trials"), ``timed_ms`` (sum of raw trial times), ``wall_s``,
    ``samples_ms`` (the corrected trials, in order: ``speedup_interval`` reads them), ``n_sets``,
    ``checked`` ([[iteration, input_set], ...]) and ``policy``. Everything JSON-serializable; the captures
    are not (the harness saves them with ``pack_captures``).
    """
    policy = policy or TimingPolicy()
    if refresh is not None and n_sets < 2:
        raise ValueError("refreshing needs at least 2 input sets (a call must never see the previous set)")
    rng = _Random(seed if seed is not None else _randbits(64))
    began = clock()
    previous: list[int | None] = [None]

    def next_set() -> int | None:
        if refresh is None:
            return None
        k = rng.randrange(n_sets) if previous[0] is None else rng.randrange(n_sets - 1)
        if previous[0] is not None and k >= previous[0]:
            k += 1  # uniform over the sets other than the previous call's
        refresh(k)
        timer.sync()  # the copy is done before the region starts (and no candidate stream can race it)
        previous[0] = k
        return k

    warm: list[float] = []
    while not _warm(warm, (clock() - began) * 1000.0, policy):
        next_set()
        warm.append(timer(call)[0])
    overhead_ms = statistics.median(_timed_trials(_nothing, timer, max(1, policy.overhead_trials)))

    first_check = rng.randrange(max(1, policy.min_trials - 1))
    raw: list[float] = []
    corrected: list[float] = []
    captures: list[Capture] = []
    stopped = pending = ""
    while not stopped:
        iteration = len(raw)
        k = next_set()
        elapsed, result = timer(call)
        raw.append(elapsed)
        corrected.append(max(elapsed - overhead_ms, 0.0))
        stopped = pending or _stop_reason(corrected, sum(raw), policy)
        sampled = iteration == first_check or (iteration >= policy.min_trials and rng.random() < policy.check_rate)
        if capture is not None and (stopped or (sampled and len(captures) < policy.checks - 1)):
            captures.append(Capture(iteration, k, capture(result)))
            timer.sync()  # the copy is done before the candidate's next call may touch its buffers
            if stopped and not pending and refresh is not None and len({c.input_set for c in captures}) < 2:
                # Every capture ran on one set: one more timed call (on another set: never the previous one),
                # captured too, so an answer replayed for any one set cannot match every capture.
                pending, stopped = stopped, ""
        del result

    low, high, coverage = median_ci(corrected, policy.confidence)
    stats = summarize(corrected)
    median = stats["median_ms"]
    stats.update({
        "raw_median_ms": statistics.median(raw), "overhead_ms": overhead_ms, "warmup": len(warm),
        "l2_flush_bytes": getattr(timer, "flush_bytes", None),
        "median_ci_ms": [low, high], "ci_coverage": coverage,
        "ci_rel": max(median - low, high - median) / median if median > 0 else None,
        "confidence": policy.confidence, "stopped": stopped, "timed_ms": sum(raw),
        "wall_s": clock() - began, "samples_ms": corrected, "n_sets": n_sets if refresh is not None else 0,
        "checked": [[c.iteration, c.input_set] for c in captures], "policy": policy.as_dict(),
    })
    return stats, captures


WARMUP_CAP = 1000  # warm-up runs at most, whatever ``warmup_ms`` asks


def _warm(warm: list[float], elapsed_ms: float, policy: TimingPolicy) -> bool:
    """Whether the warm-up is over: ``warmup_ms`` of wall time spent warming up (refreshes and flushes included),
    then two consecutive runs agree (at least ``min_warmup`` runs) or ``max_warmup`` runs are done; never more
    than ``WARMUP_CAP`` runs."""
    n = len(warm)
    if n >= WARMUP_CAP:
        return True
    if n == 0 or elapsed_ms < policy.warmup_ms:
        return False
    if n >= policy.max_warmup:
        return True
    return n >= max(2, policy.min_warmup) and abs(warm[-1] - warm[-2]) <= policy.warmup_rel * min(warm[-1], warm[-2])


def _stop_reason(samples: list[float], spent_ms: float, policy: TimingPolicy) -> str:
    """"" to go on; else why the timed runs stop (ci, budget, max_trials)."""
    n = len(samples)
    if n >= policy.max_trials:
        return "max_trials"
    if n < policy.min_trials:
        return ""
    if ci_converged(samples, policy.rel_ci, policy.confidence):
        return "ci"
    if spent_ms >= policy.budget_ms:
        return "budget"
    return ""


def make_refresh(inputs: Sequence[Any], input_sets: Sequence[Sequence[Any]]) -> Callable[[int], None]:
    """``refresh(k)``: copy ``input_sets[k]`` into ``inputs`` in place (same tensors, same ``data_ptr``).

    Every set must match ``inputs`` in length and, tensor by tensor, in shape, dtype and device; non-tensor
    arguments must be equal (they are not refreshed).
    """
    for k, values in enumerate(input_sets):
        if len(values) != len(inputs):
            raise ValueError(f"input set {k} has {len(values)} arguments, the inputs {len(inputs)}")
        for i, (dst, src) in enumerate(zip(inputs, values)):
            if type(dst) is torch.Tensor:
                if type(src) is not torch.Tensor or (src.shape, src.dtype, src.device) != (
                        dst.shape, dst.dtype, dst.device):
                    raise ValueError(f"input set {k}, argument {i}: not a tensor like the input")
            elif src != dst:
                raise ValueError(f"input set {k}, argument {i}: non-tensor arguments must be equal")

    def refresh(k: int) -> None:
        with _no_grad():
            for dst, src in zip(inputs, input_sets[k]):
                if type(dst) is torch.Tensor:
                    _copy_(dst, src)

    return refresh


def pack_captures(captures: Sequence[Capture]) -> dict[str, list]:
    """The captures as plain CPU data for a payload: iterations, input sets, outputs (tensors copied to CPU)."""
    outputs = [[_to(v, "cpu", copy=True) if type(v) is torch.Tensor else v for v in c.outputs] for c in captures]
    return {"iterations": [c.iteration for c in captures], "input_sets": [c.input_set for c in captures],
            "outputs": outputs}


def judge_captures(packed: dict[str, list], expected: Callable[[int | None], Any],
                   compare: Callable[[list, Any], str | None]) -> str | None:
    """The parent's check of a timing run's captures: None when every one matches, else a model-readable reason.

    ``packed``: what ``pack_captures`` saved (decoded by ``protocol.tensors_from_bytes``); ``expected(k)``: the reference
    outputs of input set ``k``; ``compare(actual, expected)``: the trusted comparison, a message or None. No
    capture at all is itself a mismatch (the harness always captures the last timed call).
    """
    if not isinstance(packed, dict):
        return "the timed calls' outputs were not captured"
    iterations, sets, outputs = packed.get("iterations") or [], packed.get("input_sets") or [], packed.get("outputs")
    if not iterations or outputs is None or not (len(iterations) == len(sets) == len(outputs)):
        return "the timed calls' outputs were not captured"
    for iteration, k, actual in zip(iterations, sets, outputs):
        try:
            want = expected(k)
        except (KeyError, IndexError, TypeError, ValueError):
            return f"timed call {iteration}: unknown input set {k!r}"
        message = compare(actual, want)
        if message is not None:
            return f"timed call {iteration} (input set {k}): {message}"
    return None


def summarize(times_ms: list[float]) -> dict[str, Any]:
    """Median, 10%-trimmed mean and spread (std, coefficient of variation, p10/p90, min/max) of the trials."""
    ordered = sorted(times_ms)
    n = len(ordered)
    cut = int(n * TRIM_FRACTION)
    trimmed = ordered[cut:n - cut] or ordered
    mean = statistics.fmean(ordered)
    std = statistics.stdev(ordered) if n > 1 else 0.0
    return {
        "median_ms": statistics.median(ordered),
        "trimmed_mean_ms": statistics.fmean(trimmed),
        "mean_ms": mean,
        "std_ms": std,
        "cv": std / mean if mean > 0 else math.nan,
        "p10_ms": _percentile(ordered, 0.10),
        "p90_ms": _percentile(ordered, 0.90),
        "min_ms": ordered[0],
        "max_ms": ordered[-1],
        "trials": n,
    }


def _percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def peak_memory_bytes() -> int:
    """``torch.cuda.max_memory_allocated`` of this process (the bound function)."""
    return int(_max_memory_allocated())


def device_info() -> dict[str, Any]:
    """GPU name, current SM / memory clocks (MHz, None when they cannot be read) and the peak memory so far."""
    sm, mem = gpu_clocks_mhz()
    return {"gpu": _device_name(), "sm_clock_mhz": sm, "mem_clock_mhz": mem,
            "torch": torch.__version__, "peak_memory_bytes": peak_memory_bytes()}


def gpu_clocks_mhz() -> tuple[int | None, int | None]:
    """(SM, memory) clocks of this process's GPU: pynvml if installed, else ``nvidia-smi``; (None, None) if neither."""
    index = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0].strip() or "0"
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = (pynvml.nvmlDeviceGetHandleByIndex(int(index)) if index.isdigit()
                  else pynvml.nvmlDeviceGetHandleByUUID(index))
        return (int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)))
    except Exception:  # noqa: BLE001 - not installed, or no NVML: fall back to nvidia-smi
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, None
    try:
        out = _run([smi, f"--id={index}", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits"],
                   capture_output=True, text=True, timeout=CLOCK_QUERY_TIMEOUT_S, check=True).stdout
        sm, mem = (int(float(v)) for v in out.strip().splitlines()[0].split(","))
        return sm, mem
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None, None
