"""Running out of device memory: the batch's doing, or the candidate's.

    out_of_memory(exc)                       # whether the judge's own exception is the device's memory running out
    short_beside_others(reports, total)      # whether a child's allocator reports show others made it run out

A GPU's memory is shared by the judge and every candidate child on it, so an honest candidate can run out of it
because of what else is in the batch: on an H100, 48 children and the judge ran six honest KernelBench GEMMs out of
memory in their correctness trials (docs/benchmarks-history.md, "Out of memory in a busy batch"). A verdict must not
depend on the batch, so a unit of GPU work that ran out beside other candidates' work runs once more with the GPU
to itself (``Session.gpu_unit``); only running out there is the candidate's failure (or, for the judge's own
allocations, the verifier's).

Nothing the candidate says buys that retry (docs/verifier.md, "No claim buys anything"): a candidate raised
``RuntimeError("CUDA out of memory")`` itself, computed the answer with torch in the forward that raised (then
never judged) and had the retry, on the same inputs, write it back. So the retry is decided from trusted
observations only: the judge's own allocation raising (``out_of_memory``: the judge's exceptions, never the
child's), or the child's caching allocator reporting a refused request to the harness's observer
(``child/shortage.py``) that the device alone would have held (``short_beside_others``). It is a GPU's only: on a
CPU there is no device shared with other candidates to run out of. And it runs on fresh inputs and fresh arena
bytes, after the failed forward was judged like any other.

Triton's ``OutOfResources`` (a kernel's shared memory or registers) is the kernel's own limit, not the device's
memory: it is not matched.
"""

from __future__ import annotations

import re
from typing import Any

OOM_TEXT = re.compile(r"CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|CUDA driver error 2\b")
MAX_CHAIN = 20


def out_of_memory(exc: BaseException | None) -> bool:
    """Whether ``exc`` or an exception in its chain is the device's memory running out: torch's
    ``OutOfMemoryError``, or a driver call's ``CUDA_ERROR_OUT_OF_MEMORY`` (the arena's ``cuMemCreate``: error 2).
    For the judge's own exceptions only: a child's exception, its type and its text are the candidate's to make."""
    import torch

    seen = 0
    while exc is not None and seen < MAX_CHAIN:
        if isinstance(exc, torch.OutOfMemoryError) or OOM_TEXT.search(str(exc)):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def short_beside_others(reports: Any, total_bytes: int) -> bool:
    """Whether a child's step ran out of device memory because of others: among the caching allocator's reports
    (``child/shortage.py``: what the allocator itself said, the only part of a reply this reads), a request
    larger than what the driver said was free, which with what the child already held fits in the whole device
    (``total_bytes``, measured by the judge). A request no device of this size could hold is the candidate's."""
    if not isinstance(reports, list) or total_bytes <= 0:
        return False
    for report in reports[:8]:
        values = [report.get(k) for k in ("requested", "allocated", "free")] if isinstance(report, dict) else []
        if len(values) != 3 or not all(type(v) is int and v >= 0 for v in values):
            continue
        requested, allocated, free = values
        if requested > free and requested + allocated <= total_bytes:
            return True
    return False
