"""The device work of a candidate must be the timer's to own: one stream, no CUDA graphs (candidate child, GPU).

The timer (``tritonrl.verify.shared.timing_protocol.CudaTimer``) records its events on the stream a call begins on and
synchronizes the device before its end event; the watch snapshots bytes on that stream too. Work on another stream
can run before the start event (inside the timer's hold, while the host enqueues), and a CUDA graph's replay runs
kernels neither Triton's launch hook nor torch's dispatcher sees. So every op and launch of a watched phase must
be on the stream the phase began on (``Monitor.own_stream``; a graph capture runs on a stream of its own, so one
under the watch is seen there), and after each phase no private memory pool, the trace a captured graph leaves in
the allocator, may exist (``graph_problem``). Either is flag ``threads``: the verdict says why the work could not
be timed. Everything here is bound before the candidate's import.
"""

from __future__ import annotations

from typing import Any

import torch

_cuda_stream = getattr(torch._C, "_cuda_getCurrentStream", None)  # (stream id, device, type) of the current stream
_cuda_device = getattr(torch._C, "_cuda_getDevice", None)
_cuda_initialized = torch.cuda.is_initialized
_memory_snapshot = torch.cuda.memory_snapshot


def stream_now() -> Any:
    """The current CUDA stream's id, or None where CUDA is not in use (the CPU, a CPU-only torch)."""
    if _cuda_stream is None or _cuda_device is None or not _cuda_initialized():
        return None
    return _cuda_stream(_cuda_device())[0]


def graph_problem() -> str | None:
    """Why the device's work cannot be owned because a CUDA graph was captured in this child (its private memory
    pool is in the allocator), or None."""
    if not _cuda_initialized():
        return None
    try:
        segments = _memory_snapshot()
    except Exception:  # noqa: BLE001 - an allocator that cannot say: nothing to report
        return None
    if any(tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0) for s in segments):
        return "a CUDA graph was captured: its replays run work neither the watch nor the timer can see"
    return None
