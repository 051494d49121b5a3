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
GPU no store is seen, so CUDA allocations take no noise. They take one value, as torch's fill does, but not always
NaN: NaN is the identity of a GPU's ``max`` and ``min`` (``max.f32`` is IEEE maxNum), so an accumulator started from
a fresh ``torch.empty`` output (a plausible model bug, wrong in real use) was right in every GPU correctness trial
(the twenty-ninth red team's ``a04``, accepted on an H200). So the GPU's watched forwards take turns
(``next_forward``): torch's NaN, then half the dtype's largest value (a running max started there stays there; a
sum is far off), then minus that (the same for a min). One-byte dtypes take the byte ``0x7F``, then ``0xFE``: a
byte workspace viewed as float32 holds a large positive, then a large negative number (the thirtieth red team's
``a04`` kept r29's uninitialized max in a ``uint8`` workspace when one-byte dtypes kept torch's fill, NaN as a
float). An honest kernel may write one of these values (an int8 output's 127 or -2, as it may write torch's 127):
a value so rare as an output is taken as a write that changed no byte, as NaN is. Allocations the watch does not
see (the harness's own) keep torch's fill.
"""

from __future__ import annotations

import os

import torch

_Generator = torch.Generator
_empty = torch.empty
_set = torch.Tensor.set_
_random_ = torch.Tensor.random_
_fill_ = torch.Tensor.fill_
_uint8 = torch.uint8

_state = {"on": False, "host": False, "forwards": 0}
GPU_PATTERNS = (None, 0.5, -0.5)  # a GPU forward's poison, in turn: torch's NaN, then these times the dtype's max
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


def next_forward() -> None:
    """A watched forward begins: on a GPU, fresh allocations take the next of ``GPU_PATTERNS``."""
    _state["forwards"] += 1


def gpu_pattern() -> float | None:
    """The share of its dtype's largest value every fresh CUDA allocation (elements of two bytes or more) is filled
    with now (None: torch's NaN)."""
    return GPU_PATTERNS[_state["forwards"] % len(GPU_PATTERNS)]


BYTE_PATTERNS = {0.5: 0x7F, -0.5: 0xFE}  # a one-byte dtype's turn: bytes that read as a large number in float32


def poison_value(dtype: torch.dtype, share: float) -> float | int | None:
    """``share`` of ``dtype``'s largest value (None for one-byte dtypes: ``BYTE_PATTERNS``; and complex ones)."""
    if dtype == torch.bool or dtype.is_complex or dtype.itemsize < 2:
        return None
    if dtype.is_floating_point:
        return torch.finfo(dtype).max * share
    return int(torch.iinfo(dtype).max * share)


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
    if not _state["on"] or storage.nbytes() <= start:
        return
    if t.device.type != "cpu":
        share = gpu_pattern()
        if share is None or t.dtype.is_complex:
            return
        value = poison_value(t.dtype, share)
        if value is not None:
            _fill_(_set(_empty(0, dtype=t.dtype, device=t.device), storage)[-(-start // t.element_size()):], value)
        else:  # a one-byte dtype (bool too: a byte that is neither 0 nor 1 is no value a kernel writes)
            _fill_(_set(_empty(0, dtype=_uint8, device=t.device), storage)[start:], BYTE_PATTERNS[share])
        return
    raw = _set(_empty(0, dtype=_uint8, device=t.device), storage)[start:]
    _random_(raw, 0, 2 if t.dtype == torch.bool else 256, generator=_generator(t.device))
