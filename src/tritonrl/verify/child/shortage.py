"""The allocator's own word that the device ran out of memory (candidate child, GPU only).

    shortage = Shortage(); shortage.install(device)    # before the candidate's import
    reply["device_short"] = shortage.taken()           # after each step: what the allocator reported in it

A candidate can raise ``torch.OutOfMemoryError("CUDA out of memory")`` itself, or any exception saying so: an
exception's type and text are the candidate's claim, and a claim buys nothing (``shared.device_memory``). What the
harness passes on is what PyTorch's CUDA caching allocator reported to an observer attached here, before any
candidate code ran: each allocation it refused, with the bytes asked for and the bytes the driver said were free
(PyTorch's observer is called with ``(device, requested, total, free)``, ``total`` the device's size or the
process's allowed share, never what the process holds), and the bytes this process's allocator held then, read
here (``torch.cuda.memory_reserved``: the allocator's lock is released before its observers run). The judge decides from those numbers whether the device ran out because of
others (``device_memory.short_beside_others``). A candidate can still make the allocator refuse a request on
purpose; what that buys is a retry on inputs it has never seen (``Session.retry_trial``), nothing more.

Memory a launcher or the driver runs out of outside the caching allocator (``CUDA_ERROR_OUT_OF_MEMORY`` from a
module load) is not reported: such a step is the candidate's failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

MAX_EVENTS = 8  # a step's reports kept (the judge needs one)


class Shortage:
    """The caching allocator's out-of-memory reports since the last ``taken``. ``held`` (a device -> bytes this
    process's allocator holds; ``torch.cuda.memory_reserved`` by default) is the tests' to replace."""

    def __init__(self, held: Callable[[Any], int] | None = None) -> None:
        self._events: list[dict[str, int]] = []
        self._held = held

    def install(self, device: str) -> bool:
        """Attach the observer (a GPU's allocator only); whether it is attached."""
        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if not device.startswith("cuda") or attach is None:
            return False
        attach(self._observe)
        return True

    def _observe(self, device: Any, requested: Any, total: Any, free: Any) -> None:
        if len(self._events) < MAX_EVENTS:
            held = self._held or torch.cuda.memory_reserved
            self._events.append({"requested": int(requested), "allocated": int(held(device)), "free": int(free),
                                 "total": int(total)})

    def taken(self) -> list[dict[str, int]]:
        """The reports since the last call (and forget them)."""
        events, self._events = self._events, []
        return events
