"""On a GPU, the bytes just past each storage a watched launch is handed hold a canary while it runs (candidate child).

    guards = place(given)          # before the launch: the canaries set, what they cover kept
    ... the launch ...
    wrote = lift(guards)           # after it: the storages whose guard it changed; every byte put back

Under the CPU interpreter every address a kernel touches is checked against the tensors handed to its launch
(``bounds.py``); a compiled kernel's addresses are not. So the most common Triton bug there is, a last block without
a mask, passed every GPU verdict: its stray stores landed past the output, in memory nothing reads, and its stray
loads were dropped (the twenty-ninth red team's ``a05``, accepted on an H200 with and without timing). Here the
bytes from the end of each handed storage to the next ``GUARD_ALIGN`` boundary hold a canary during the launch:
memory no tensor holds (the caching allocator rounds every block up to 512 bytes; the judge's arena starts every
slot at a multiple of 256). Each guard's canary is one byte repeated, drawn afresh for every launch from bytes that
make a large number in any float dtype of two bytes or more (``0x70``-``0x7E``: positive; ``0xF0``-``0xFE``:
negative), a different byte for each storage of the launch: a kernel that copies one guard into another, or
passes a positive canary through a ReLU, changes bytes (the thirtieth red team's ``a02`` gave its input and its
output guards of one byte, when they alternated by the storages' order). A load there makes a sum or a max far off;
a store there is seen: the launch must leave every guard as it found it (else the monitor stops the phase,
``runtime_error``). Then each guard gets its own bytes back.

Limits: a storage whose size is a multiple of ``GUARD_ALIGN`` has no guard (the trials' edge shapes, ``2^j + 1``
elements, give one); a store past the guard is not seen; a guard that would overlap another handed storage is not
set (a storage cut out of another one's memory); stores that land on another storage's bytes are the blinding's and
the outputs' check's to find.
"""

from __future__ import annotations

import ctypes
import random

import torch

from tritonrl.verify.shared.arena import _CudaArrayInterface

GUARD_ALIGN = 256  # bytes: the arena's slot alignment (the caching allocator's, 512, is a multiple)
CANARIES = (*range(0x70, 0x7F), *range(0xF0, 0xFF))  # a guard's byte: a large number, positive or negative

_as_tensor = torch.as_tensor
_frombuffer = torch.frombuffer
_clone = torch.clone
_fill_ = torch.Tensor.fill_
_copy_ = torch.Tensor.copy_
_ne = torch.ne
_any = torch.any
_stack = torch.stack
_uint8 = torch.uint8
_random = random.SystemRandom()


def _bytes_at(ptr: int, nbytes: int, device: torch.device) -> torch.Tensor:
    """``nbytes`` at an address of ``device``, as a uint8 tensor over them (no copy)."""
    if device.type == "cuda":
        return _as_tensor(_CudaArrayInterface(ptr, nbytes), device=device)
    return _frombuffer((ctypes.c_ubyte * nbytes).from_address(ptr), dtype=_uint8)


def place(given: list[torch.Tensor], device_type: str = "cuda") -> list[tuple[torch.Tensor, torch.Tensor, int, int]]:
    """A canary after each storage of ``given`` on ``device_type`` that ends short of a ``GUARD_ALIGN`` boundary:
    ``(guard, its own bytes, canary byte, the storage's address)`` each. The caller runs it where the watch does
    not count it (``Monitor.internal``)."""
    spans: dict[int, tuple[int, int, torch.device]] = {}
    for t in given:
        storage = t.untyped_storage()
        if t.device.type == device_type and storage.nbytes():
            spans[storage.data_ptr()] = (storage.data_ptr(), storage.data_ptr() + storage.nbytes(), t.device)
    ranges = sorted(spans.values(), key=lambda span: span[0])
    canaries = _random.sample(CANARIES, len(CANARIES))  # this launch's, one each (more storages: again in turn)
    guards = []
    for i, (start, end, device) in enumerate(ranges):
        stop = -(-end // GUARD_ALIGN) * GUARD_ALIGN
        if start % GUARD_ALIGN or stop == end or any(a < stop and end < b for a, b, _ in ranges if a != start):
            continue
        guard = _bytes_at(end, stop - end, device)
        byte = canaries[i % len(canaries)]
        guards.append((guard, _clone(guard), byte, start))
        _fill_(guard, byte)
    return guards


def lift(guards: list[tuple[torch.Tensor, torch.Tensor, int, int]]) -> list[int]:
    """After the launch: the addresses of the storages whose guard it changed, every guard put back as it was."""
    if not guards:
        return []
    try:
        changed = _stack([_any(_ne(guard, byte)) for guard, _, byte, _ in guards]).tolist()
    finally:
        for guard, own, _, _ in guards:
            _copy_(guard, own)
    return [start for (_, _, _, start), hit in zip(guards, changed) if hit]
