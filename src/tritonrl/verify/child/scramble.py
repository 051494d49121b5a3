"""Fresh allocations hold noise of their own while the poison is on, under the CPU interpreter (candidate child).

torch's deterministic mode fills every fresh allocation with one value (NaN; ints: their maximum), so an output
never written reads as wrong. One value can be read, though: a kernel that loads its fresh ``torch.empty`` output
and computes only where it reads NaN computes everything under the verifier and nothing in real use, where fresh
memory holds whatever it held (``integrity/f51_poison_relu_computes_only_over_nan_output``). So while the poison is
on (``harness.fill_allocations``), every CPU allocation the watch sees (``aten_ops.ALLOC_OPS``, and what
``resize_`` adds to a tensor) is filled again with random bytes from a generator seeded from the OS, different in
each allocation and each call (bool: random 0s and 1s): what a kernel reads from memory it did not write is noise
(NaN, infinities, denormals and every finite value among it), and an output not written still reads as wrong.

The watch credits a launch with the bytes it changed, and a kernel that stores the very bytes the noise held
changes none (an element of bf16 in 65,536): under the interpreter the launch's stores are known
(``bounds.Stores``), and an unset byte stored to is credited whatever it holds (``provenance.credit_launch``). On a
GPU no store is seen, so CUDA allocations keep torch's NaN (a limit: docs/verifier.md). Allocations the watch does
not see (the harness's own) keep torch's fill.
"""

from __future__ import annotations

import os

import torch

_Generator = torch.Generator
_empty = torch.empty
_set = torch.Tensor.set_
_random_ = torch.Tensor.random_
_uint8 = torch.uint8

_state = {"on": False, "host": False}
_generators: dict[torch.device, torch.Generator] = {}


def set_device(device: str) -> None:
    """The child's device: on the CPU the noise is the only poison (``replaces_fill``)."""
    _state["host"] = device == "cpu"


def replaces_fill() -> bool:
    """Whether torch's own fill is off: in a CPU child. There torch's fill was also seen as an op: ``torch.empty(n,
    out=buf)`` resizes ``buf`` and then fills it with NaN through ``fill_``, a constant, which brought the one value
    back (the twentieth red team); with torch's fill off, what ``resize_`` adds holds noise, and memory no watched
    op allocated holds what it held, as in real use."""
    return _state["host"]


def set_enabled(on: bool) -> None:
    """Whether fresh allocations are filled with noise (the harness turns it on with torch's fill)."""
    _state["on"] = bool(on)


def _generator(device: torch.device) -> torch.Generator:
    generator = _generators.get(device)
    if generator is None:
        generator = _Generator(device=device)
        generator.manual_seed(int.from_bytes(os.urandom(8), "little"))
        _generators[device] = generator
    return generator


def fill(t: torch.Tensor, start: int = 0) -> None:
    """Random bytes over the storage of ``t`` from byte ``start`` on (a fresh allocation: all of it; a tensor
    ``resize_`` grew: what it added), if the poison is on and ``t`` is in host memory; the caller runs it where the
    watch does not count it (``Monitor.internal``)."""
    storage = t.untyped_storage()
    if not _state["on"] or t.device.type != "cpu" or storage.nbytes() <= start:
        return
    raw = _set(_empty(0, dtype=_uint8, device=t.device), storage)[start:]
    _random_(raw, 0, 2 if t.dtype == torch.bool else 256, generator=_generator(t.device))
