"""Running out of device memory: the batch's doing, or the candidate's.

    out_of_memory(exc)          # whether an exception (or one in its chain) is the device's memory running out
    claims_out_of_memory(reply) # whether a child's reply says its step ran out of device memory

A GPU's memory is shared by the judge and every candidate child on it, so an honest candidate can run out of it
because of what else is in the batch: on an H100, 48 children and the judge ran six honest KernelBench GEMMs out of
memory in their correctness trials (docs/benchmarks.md, "Out of memory in a busy batch"). A verdict must not
depend on the batch, so a unit of GPU work that ran out beside other candidates' work runs once more with the GPU
to itself (``Session.gpu_unit``); only running out there is the candidate's failure (or, for the judge's own
allocations, the verifier's). A child's claim that it ran out buys it nothing but that one retry, alone.

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
    ``OutOfMemoryError``, or a driver call's ``CUDA_ERROR_OUT_OF_MEMORY`` (the arena's ``cuMemCreate``: error 2)."""
    import torch

    seen = 0
    while exc is not None and seen < MAX_CHAIN:
        if isinstance(exc, torch.OutOfMemoryError) or OOM_TEXT.search(str(exc)):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def claims_out_of_memory(*replies: Any) -> bool:
    """Whether any of a step's replies from the child says it ran out of device memory (its claim: it earns only
    a retry with the GPU to itself)."""
    return any(isinstance(r, dict) and r.get("out_of_memory") is True for r in replies)
