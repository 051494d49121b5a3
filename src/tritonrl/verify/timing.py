"""Calibrated GPU timing of one forward pass: the protocol of ``docs/timing.md``.

    stats = time_forward(fn, warmup=10, trials=100)   # in a candidate's child, on its one visible GPU
    stats["median_ms"], stats["trimmed_mean_ms"], stats["cv"], ...

Per call: ``warmup`` untimed runs (JIT compilation and autotuning happen here), then ``trials`` timed runs, each
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
import shutil
import statistics
import subprocess
from collections.abc import Callable
from typing import Any

import torch

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


def synchronize() -> None:
    """Wait for every stream of the current GPU (the bound function; safe after candidate import)."""
    _synchronize()


def time_forward(fn: Callable[[], Any], warmup: int, trials: int,
                 flush_bytes: int = L2_FLUSH_BYTES) -> dict[str, Any]:
    """Statistics (``summarize``) of ``trials`` timed calls of ``fn()`` on the current CUDA device.

    ``median_ms`` etc. are corrected for the fixed cost of the protocol itself (the device-wide synchronize
    inside the region and the end event's launch), measured the same way around an empty region in this call:
    ``overhead_ms``; the uncorrected median is ``raw_median_ms``.
    """
    flush = _empty(max(1, flush_bytes // 4), dtype=torch.float32, device="cuda")
    for _ in range(max(1, warmup)):  # at least one: compilation and autotuning never land in a trial
        fn()
    _synchronize()
    overhead_ms = statistics.median(_timed_trials(_nothing, flush, max(10, trials // 2)))
    raw = _timed_trials(fn, flush, max(1, trials))
    del flush
    stats = summarize([max(t - overhead_ms, 0.0) for t in raw])
    return {**stats, "raw_median_ms": statistics.median(raw), "overhead_ms": overhead_ms,
            "warmup": max(1, warmup), "l2_flush_bytes": flush_bytes}


def _timed_trials(fn: Callable[[], Any], flush: torch.Tensor, trials: int) -> list[float]:
    """One elapsed time per trial: cold L2, events on the current stream, device-wide sync inside the region."""
    times_ms = []
    stream = _current_stream()
    for _ in range(trials):
        _zero_(flush)  # evict the L2; no sync after it: the host's launch cost overlaps the flush, as in do_bench
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        _event_record(start, stream)
        fn()
        _synchronize()  # device-wide, before the end event: work left on side streams is inside the measurement
        _event_record(end, stream)
        _synchronize()
        times_ms.append(_event_elapsed(start, end))
    return times_ms


def _nothing() -> None:
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
