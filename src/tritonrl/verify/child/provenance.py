"""Byte provenance of a forward pass: which bytes a Triton kernel wrote, and which came from anywhere else.

Every byte of every storage a forward touches has a class (``STALE`` ... ``TORCH``, below); the monitor
(``tritonrl.verify.child.monitor``) sets them as ops and launches happen, and judges the outputs by them at the end
(``provenance_problem``, ``layout_problem``). Masks are ``uint8`` tensors, one per storage, on its device.
"""

from __future__ import annotations

from typing import Any

import torch

_uint8 = torch.uint8
_untyped_storage = torch.Tensor.untyped_storage
_storage_ptr = torch.UntypedStorage.data_ptr
_storage_nbytes = torch.UntypedStorage.nbytes

STALE, UNSET, INPUT, PARAM, CONST, KERNEL, COPIED, TORCH, ECHO = range(9)
CLASS_NAMES = ("stale", "unset", "input", "param", "const", "kernel", "copied", "torch", "echo")
# A copy (or echo) is recognised from at least this many elements written: one value equal to an input's at its
# place is no evidence (an honest reduction to one value writes an input's value; at position 0 it matched).
MIN_COPY_ELEMENTS = 2
FROM_INPUTS = (INPUT, KERNEL, COPIED, TORCH, ECHO)  # classes whose values may carry this call's inputs
WRITTEN = {KERNEL, ECHO}  # written by a kernel in this forward (ECHO: the same bits as an input, same place)
NOT_KERNELS = {STALE, COPIED, TORCH}  # what an output byte must not be
LAUNDERED = NOT_KERNELS | {UNSET}     # what a copy kernel may not pass on as its own (UNSET: written unseen)
WEAK_NOT_KERNELS = {COPIED, TORCH}    # the same in timed calls (unpoisoned memory: a rewrite changes no byte)
# A kernel's writes this close to an argument of a class in LAUNDERED are a copy; by the float type the bytes are
# read as (one ulp of bf16 is 2**-8, of fp16 2**-11).
COPY_RTOL = {torch.float64: 1e-6, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-2}
_LAUNDERED = torch.tensor(sorted(LAUNDERED), dtype=_uint8)
_OWN = torch.tensor([CONST, KERNEL], dtype=_uint8)  # what a cast or a layout copy may move and stay a kernel's
REINTERPRET = {8: (torch.float64,), 4: (torch.float32,), 2: (torch.float16, torch.bfloat16)}  # by element size


def storage_key(t: torch.Tensor) -> tuple[str, int]:
    return (t.device.type, _storage_ptr(_untyped_storage(t)))


class Provenance:
    """The class of every byte of every storage a forward touched (``uint8`` masks, one per storage)."""

    def __init__(self) -> None:
        self.masks: dict[tuple[str, int], torch.Tensor] = {}

    def mask(self, t: torch.Tensor) -> torch.Tensor:
        key, nbytes = storage_key(t), _storage_nbytes(_untyped_storage(t))
        mask = self.masks.get(key)
        if mask is None or mask.numel() != nbytes:  # first seen in this forward: made before it (STALE == 0)
            mask = self.masks[key] = torch.zeros(nbytes, dtype=_uint8, device=t.device)
        return mask

    def region(self, t: torch.Tensor) -> torch.Tensor:
        """The mask bytes of exactly the bytes ``t`` covers, shaped ``(*t.shape, itemsize)``."""
        size = t.element_size()
        return torch.as_strided(self.mask(t), (*t.shape, size), (*(s * size for s in t.stride()), 1),
                                t.storage_offset() * size)

    def mark(self, t: torch.Tensor, cls: int) -> None:
        if t.numel():
            self.region(t).fill_(cls)

    def classes(self, t: torch.Tensor) -> set[int]:
        return set(torch.unique(self.region(t)).tolist()) if t.numel() else set()

    def seen(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s storage (at its current size) was met before in this forward."""
        mask = self.masks.get(storage_key(t))
        return mask is not None and mask.numel() == _storage_nbytes(_untyped_storage(t))

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """``dst`` now holds a torch copy of ``src``. An identity copy keeps the classes element for element; a
        cast (same shape, both dense, another dtype) keeps a kernel's results and constants as ``KERNEL``, element
        for element, and makes the rest (inputs, echoes of them, torch-made data) ``COPIED``; a copy in another
        layout is ``COPIED`` unless it moves only kernel results and constants."""
        if not dst.numel():
            return
        dense = dst.shape == src.shape and dst.is_contiguous() and src.is_contiguous()
        if dense and dst.dtype == src.dtype:
            self.region(dst).copy_(self.region(src))
            return
        if dense:
            source = self.region(src)
            kernel = torch.isin(source, _OWN.to(source.device)).all(dim=-1)
            unset = (source == UNSET).all(dim=-1)
            region = self.region(dst)
            region[kernel] = KERNEL
            region[unset] = UNSET
            region[~(kernel | unset)] = COPIED
            return
        classes = self.classes(src)
        self.mark(dst, KERNEL if classes <= {KERNEL, CONST} else UNSET if classes == {UNSET} else COPIED)


class CoarseProvenance:
    """``Provenance``'s rules with one set of classes per storage, kept on the host (timed calls: no device work
    in the timed region). Unseen storages are ``STALE``; a write that covers a whole storage replaces its set, a
    partial one adds to it."""

    def __init__(self) -> None:
        self.sets: dict[tuple[str, int], set[int]] = {}

    def _covers(self, t: torch.Tensor) -> bool:
        return t.numel() * t.element_size() == _storage_nbytes(_untyped_storage(t)) and t.is_contiguous()

    def mark(self, t: torch.Tensor, cls: int) -> None:
        if not t.numel():
            return
        key = storage_key(t)
        if self._covers(t) or key not in self.sets:
            self.sets[key] = {cls} if self._covers(t) else {STALE, cls}
        else:
            self.sets[key].add(cls)

    def launched(self, t: torch.Tensor) -> None:
        """``t``'s storage was handed to a launch, which may have written any of it: it is the kernel's, except
        torch-made data it may not have overwritten (without snapshots that cannot be told, so it stays)."""
        key = storage_key(t)
        self.sets[key] = {KERNEL} | (self.sets.get(key, set()) & {COPIED, TORCH})

    def classes(self, t: torch.Tensor) -> set[int]:
        return set(self.sets.get(storage_key(t), {STALE})) if t.numel() else set()

    def seen(self, t: torch.Tensor) -> bool:
        return storage_key(t) in self.sets

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        if not dst.numel():
            return
        classes = self.classes(src)
        same_layout = (dst.dtype == src.dtype and dst.shape == src.shape and dst.is_contiguous()
                       and src.is_contiguous())
        if not same_layout:
            classes = {KERNEL if classes <= {KERNEL, CONST} else UNSET if classes == {UNSET} else COPIED}
        key = storage_key(dst)
        if self._covers(dst) or key not in self.sets:
            self.sets[key] = classes if self._covers(dst) else classes | {STALE}
        else:
            self.sets[key] |= classes


def copy_ends(name: str, inputs: list, outs: list) -> tuple[Any, Any]:
    """(destination, source) of a copy op: ``copy_(dst, src)``, ``_copy_from(src, dst)``, else ``op(src) -> out``."""
    if name == "copy_" and len(inputs) > 1:
        return inputs[0], inputs[1]
    if name.startswith("_copy_from") and len(inputs) > 1:
        return inputs[1], inputs[0]
    return (outs[0] if outs else None), (inputs[0] if inputs else None)


def layout_problem(i: int, value: torch.Tensor) -> str | None:
    """A transposed or broadcast view as an output: the layout the task asks for was made by a view, not written
    by a kernel (slices and reshapes of a kernel's output are fine)."""
    dims = [(stride, size) for stride, size in zip(value.stride(), value.shape) if size > 1]
    if any(stride == 0 for stride, _ in dims):
        return f"output {i} is a broadcast view (a stride of 0): write the values, not a view of fewer"
    if any(a < b for (a, _), (b, _) in zip(dims, dims[1:])):
        return f"output {i} is a transposed view (strides {tuple(value.stride())}): a kernel must write it in order"
    return None


def provenance_problem(i: int, classes: set[int], weak: bool = False) -> str | None:
    """Why output ``i``, whose bytes have ``classes``, is not a kernel's work, or None. ``weak`` (timed calls, in
    memory that is not poisoned: a kernel that rewrites the bytes already there changes none): only torch-made
    bytes are refused."""
    refused = classes & (WEAK_NOT_KERNELS if weak else NOT_KERNELS)
    if refused:
        return (f"output {i} holds values torch computed or copied, or made before this forward pass "
                f"({_names(refused)}), not values a Triton kernel computed in it")
    if weak:
        return None
    if not classes & WRITTEN:
        return f"output {i} was not written by a Triton kernel launched in this forward pass"
    if UNSET in classes:
        return (f"output {i} has elements no Triton kernel wrote (left as allocated, or written where the "
                "verifier cannot see: a thread, numpy): a kernel must write every element")
    return None


def _names(classes: set[int]) -> str:
    return ", ".join(CLASS_NAMES[c] for c in sorted(classes))


def _elements(changed: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``changed`` (one flag per byte of ``t``'s storage) as one flag per element of ``t``, shaped like ``t``."""
    size = t.element_size()
    return torch.as_strided(changed, (*t.shape, size), (*(s * size for s in t.stride()), 1),
                            t.storage_offset() * size).any(dim=-1)


def credit_launch(prov: Provenance, watched: list, given: list, before: dict, storage_bytes: Any) -> None:
    """After a launch: the bytes it changed (``before`` its snapshot of each watched storage, ``storage_bytes`` the
    flat view of one) are ``KERNEL``'s, whole elements at a time (a value the kernel wrote may share some bytes
    with what was there before), unless the launch only copied an argument it may not pass on (``copied_from``)."""
    changed_in: dict[tuple[str, int], torch.Tensor] = {}
    for t in watched:
        key = storage_key(t)
        if key not in changed_in:
            changed = changed_in[key] = before[key] != storage_bytes(t)
            prov.mask(t)[changed] = KERNEL
    copies = []
    for t in watched:
        changed = changed_in[storage_key(t)]
        if t.numel() and bool(changed.any()):
            elems = _elements(changed, t)
            prov.region(t)[elems] = KERNEL
            if int(elems.sum()) >= MIN_COPY_ELEMENTS:
                copies.append((t, elems))
    for t, elems in copies:  # after every view is credited: a copy seen through any view of a storage stays one
        source = copied_from(prov, t, elems, given)
        if source is not None:
            prov.region(t)[elems] = source
        else:
            echo = echoes(prov, t, elems, given)
            if echo is not None:
                prov.region(t)[echo] = ECHO


def echoes(prov: Provenance, dst: torch.Tensor, elems: torch.Tensor, given: list) -> torch.Tensor | None:
    """Which elements of ``dst`` the launch wrote (``elems``) hold the same bits, at the same flat position, as an
    input or parameter argument of the same dtype (a mask shaped like ``dst``), or None. Such an element is the
    kernel's, but a torch copy of it in another layout or dtype is torch's work (``COPIED``)."""
    found = None
    flat = dst.detach().reshape(-1)
    for src in given:
        if src.dtype != dst.dtype or not src.numel() or storage_key(src) == storage_key(dst):
            continue
        if not prov.classes(src) & {INPUT, PARAM}:
            continue
        n = min(src.numel(), dst.numel())
        same = torch.zeros(dst.numel(), dtype=torch.bool, device=dst.device)
        a, b = flat[:n], src.detach().reshape(-1)[:n]
        same[:n] = (a.view(_uint8).reshape(n, -1) == b.view(_uint8).reshape(n, -1)).all(dim=-1) if \
            a.dtype != torch.bool else a == b
        same = same.reshape(dst.shape) & elems
        found = same if found is None else found | same
    return found if found is not None and bool(found.any()) else None


def copied_from(prov: Provenance, dst: torch.Tensor, elems: torch.Tensor, given: list) -> int | None:
    """The class (in ``LAUNDERED``) of an argument of the launch whose values the elements of ``dst`` it wrote
    (``elems``) repeat at the same flat positions, within the tolerance of the float type the bytes are read as
    (integer views of float data included), or None. The source may be longer or shorter than ``dst``."""
    where = elems.reshape(-1).nonzero().reshape(-1)
    count = where.numel()
    if not count:
        return None
    for src in given:
        if not src.numel() or storage_key(src) == storage_key(dst):
            continue
        positions = where[where < src.numel()]
        if positions.numel() * 2 < count:
            continue
        region = prov.region(src).reshape(src.numel(), -1)[positions]
        bad = _LAUNDERED.to(region.device)
        laundered = torch.isin(region, bad).any(dim=-1)  # compared only where the source is such data
        positions = positions[laundered]
        if positions.numel() * 2 < count:
            continue
        for a, b, rtol in _readings(dst.detach().reshape(-1)[positions], src.detach().reshape(-1)[positions]):
            close = (a - b).abs() <= rtol * (b.abs() + a.abs().mean() + 1e-30)
            if int(close.sum()) * 2 >= count:
                return int(torch.isin(region[laundered], bad).mul(region[laundered]).max())
    return None


def _readings(a: torch.Tensor, b: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor, float]]:
    """``a`` and ``b`` as float64 values, each way their bytes can be read as floats, with the tolerance of that
    reading: as the values they are (floats), and, for elements of equal size, the bits as each float type."""
    readings = []
    if a.is_floating_point() or b.is_floating_point():
        rtol = max(COPY_RTOL.get(a.dtype, 0.0), COPY_RTOL.get(b.dtype, 0.0)) or 1e-4
        readings.append((a.double(), b.double(), rtol))
    if a.element_size() == b.element_size():
        for dtype in REINTERPRET.get(a.element_size(), ()):
            if dtype in (a.dtype, b.dtype):
                continue
            x, y = a.contiguous().view(dtype).double(), b.contiguous().view(dtype).double()
            finite = torch.isfinite(x) & torch.isfinite(y)
            readings.append((torch.where(finite, x, 0.0), torch.where(finite, y, 1.0), COPY_RTOL[dtype]))
    return readings
