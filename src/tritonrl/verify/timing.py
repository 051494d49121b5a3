"""GPU timing of one forward pass: warm-up, L2 flush, CUDA events, device-wide sync, median of N trials.

Kept simple on purpose (a later issue calibrates it). The CUDA functions used are bound when this module is
imported, which the harness does before it imports any candidate code, so a candidate that later patches
``torch.cuda.Event`` or ``torch.cuda.synchronize`` does not change what is called here. On a CPU there is no
timing at all: callers report ``None`` and the flag ``timing_unavailable`` instead of a number.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # larger than any current GPU's L2, as KernelBench does

# Bound before candidate import (see the module docstring).
_Event = torch.cuda.Event
_synchronize = torch.cuda.synchronize
_empty = torch.empty
_zero_ = torch.Tensor.zero_


def time_forward(fn: Callable[[], Any], warmup: int, trials: int) -> dict[str, Any]:
    """Median milliseconds of ``fn()`` on the current CUDA device, with the spread of the trials."""
    flush = _empty(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    for _ in range(warmup):
        fn()
    _synchronize()
    times_ms = []
    for _ in range(trials):
        _zero_(flush)  # evict the L2 so every trial starts cold
        _synchronize()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
        fn()
        _synchronize()  # device-wide, before the end event: work on side streams is inside the measurement
        end.record()
        _synchronize()
        times_ms.append(start.elapsed_time(end))
    del flush
    return {
        "median_ms": statistics.median(times_ms),
        "mean_ms": statistics.fmean(times_ms),
        "min_ms": min(times_ms),
        "max_ms": max(times_ms),
        "trials": trials,
        "gpu": torch.cuda.get_device_name(),
    }
