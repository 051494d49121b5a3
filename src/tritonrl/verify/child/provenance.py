"""Byte provenance of a forward pass: which bytes a Triton kernel wrote, and which came from anywhere else.

Every byte of every storage a forward touches has a class (``STALE`` ... ``FOREIGN``, below); the monitor
(``tritonrl.verify.child.monitor``) sets them as ops and launches happen, and judges the outputs by them at the end
(``provenance_problem``, ``layout_problem``). Masks are ``uint8`` tensors, one per storage, on its device; each
storage also has the set of classes it may hold (``kinds``, kept on the host), which decides what a launch handed
it passes on (``credit_launch``: a kernel that reads foreign or torch-made data computes foreign or torch-made
data). A storage first met as an argument starts as the watch last knew it (``origins.Origins``): made before this
forward (``STALE``), torch's or foreign; one it never saw made is ``FOREIGN``.
"""

from __future__ import annotations

from typing import Any

import torch

from tritonrl.verify.child.copies import COPY_RTOL, copied_from, echoes

_uint8 = torch.uint8
_untyped_storage = torch.Tensor.untyped_storage
_storage_ptr = torch.UntypedStorage.data_ptr
_storage_nbytes = torch.UntypedStorage.nbytes

STALE, UNSET, INPUT, PARAM, CONST, KERNEL, COPIED, TORCH, ECHO, FOREIGN, RELAID = range(11)
CLASS_NAMES = ("stale", "unset", "input", "param", "const", "kernel", "copied", "torch", "echo", "foreign", "relaid")
# A copy (or echo) is recognised from at least this many elements written: one value equal to an input's at its
# place is no evidence (an honest reduction to one value writes an input's value; at position 0 it matched).
MIN_COPY_ELEMENTS = 2
# RELAID (strict mode): a kernel's data that torch copied in a permuted order (a transpose materialised). It may be
# returned, as the kernel's; a launch handed it computes torch's data (``launch_taint``): torch did the layout work.
WRITTEN = {KERNEL, ECHO, RELAID}  # written by a kernel in this forward (ECHO: the same bits as an input, same place)
NOT_KERNELS = {STALE, COPIED, TORCH, FOREIGN}  # what an output byte must not be
# what a copy kernel may not pass on as its own (UNSET: written unseen); also what a launch not handed it must not
# reach (``Monitor._blind``)
LAUNDERED = NOT_KERNELS | {UNSET, RELAID}
WEAK_NOT_KERNELS = {COPIED, TORCH, FOREIGN}  # the same in timed calls (unpoisoned memory: a rewrite changes no byte)
# What a launch handed such data writes, in strict mode (in permissive mode torch may compute, so only FOREIGN):
# numpy's or Python's values (FOREIGN: memory the watch never saw made, data from Python lists or numpy arrays)
# and torch's (TORCH: in strict mode only what torch computed while the model was built or imported, since torch
# compute in a forward is refused) are not a kernel's work, whatever the kernel does with them.
TAINTS_STRICT = (FOREIGN, TORCH)
TAINTS_PERMISSIVE = (FOREIGN,)
_LAUNDERED = torch.tensor(sorted(LAUNDERED), dtype=_uint8)
_ORIGINAL = torch.tensor([INPUT, PARAM], dtype=_uint8)
_REMEMBERED = {COPIED, TORCH}  # made by torch in a forward: kept for ``settle_outputs`` unless they taint launches
_OWN = torch.tensor([CONST, KERNEL], dtype=_uint8)  # what a cast or a layout copy may move and stay a kernel's
_OWN_RELAID = torch.tensor([CONST, KERNEL, RELAID], dtype=_uint8)


def storage_key(t: torch.Tensor) -> tuple[str, int]:
    return (t.device.type, _storage_ptr(_untyped_storage(t)))


def taint_of(kinds: set[int], taints: tuple[int, ...]) -> int | None:
    """The class data made from storages that may hold ``kinds`` takes: the first of ``taints`` among them."""
    return next((c for c in taints if c in kinds), None)


def copy_class(classes: set[int]) -> int:
    """The class of a torch copy, in another layout, of data of ``classes``: a kernel's results and constants stay
    the kernel's (its re-laid data stays re-laid), foreign and torch-made data stay what they are, anything else is
    torch's copy (``COPIED``)."""
    if classes <= {KERNEL, CONST}:
        return KERNEL
    if classes <= {KERNEL, CONST, RELAID}:
        return RELAID
    if classes == {UNSET}:
        return UNSET
    return FOREIGN if FOREIGN in classes else TORCH if TORCH in classes else COPIED


def permutes(dst: torch.Tensor, src: torch.Tensor) -> bool:
    """Whether a copy of ``src`` into ``dst`` (``src`` broadcast to ``dst``'s shape) moves elements to another
    order in memory: their dimensions (those of more than one element, broadcast ones aside) ordered by stride
    differ, as in ``x.t().contiguous()``, ``x.permute(...).reshape(...)`` or a copy into a transposed view. A slice,
    a broadcast, a cast or a copy that keeps the layout (``clone`` of a transposed view) keeps the order. Shapes and
    strides only: no tensor op."""
    pad = dst.dim() - src.dim()
    if pad < 0:
        return False
    shape, stride = (1,) * pad + tuple(src.shape), (0,) * pad + tuple(src.stride())
    dims = [d for d in range(dst.dim()) if dst.shape[d] > 1 and shape[d] > 1 and stride[d]]
    if any(shape[d] != dst.shape[d] for d in dims):
        return False
    return (sorted(dims, key=lambda d: (-dst.stride(d), d)) != sorted(dims, key=lambda d: (-stride[d], d)))


def relayout_class(classes: set[int], dst: torch.Tensor, src: torch.Tensor, strict: bool) -> int:
    """The class of a torch copy of data of ``classes`` from ``src`` into ``dst`` in another layout: ``copy_class``,
    except that in strict mode a kernel's data copied in a permuted order is ``RELAID`` (torch did a transpose's
    work: issue 51's red team had a kernel write 2x, torch transpose it and a second kernel halve it, on
    ``l1_transpose``). Constants alone (a permuted fill) stay the kernel's."""
    cls = copy_class(classes)
    if strict and cls == KERNEL and KERNEL in classes and permutes(dst, src):
        return RELAID
    return cls


CLASSES_KEPT = 256  # regions whose classes a forward's provenance keeps (``Provenance.classes``)


class Provenance:
    """The class of every byte of every storage a forward touched (``uint8`` masks, one per storage), and per
    storage the classes it may hold (``kinds``). ``origins`` (``origins.Origins``, or None: unknown memory is
    STALE) says how a storage first met here starts; ``taints`` what a launch passes on (``TAINTS_STRICT``)."""

    def __init__(self, origins: Any = None, taints: tuple[int, ...] = TAINTS_STRICT) -> None:
        self.masks: dict[tuple[str, int], torch.Tensor] = {}
        self.kinds: dict[tuple[str, int], set[int]] = {}
        self.origins, self.taints = origins, taints
        self.met: dict[tuple[str, int], Any] = {}  # weak references to the storages, for ``Origins.absorb``
        # Launches that wrote one element each (too few to call a copy alone), by destination storage: the
        # elements, and the laundered sources they were handed as they were then (``settle_singles``)
        self.singles: dict[tuple[str, int], dict[str, Any]] = {}
        self._snapshots: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]] = {}
        # Laundered data made in this forward that a launch handed it does not taint (``remember``): its values and
        # classes as made, for the outputs' last copy search (``settle_outputs``)
        self.made: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.originals: list[torch.Tensor] = []  # the forward's inputs and parameters, as marked (``moved_input``)
        # ``classes`` of a region, kept while its mask is unchanged: the mask itself and its version counter (torch
        # bumps it on every in-place write, through any view) in the key; a forward of many launches asked it of
        # the same unchanged input at each launch, a sort of the whole mask each time (docs/benchmarks.md, r16_i8)
        self._classes: dict[tuple, tuple[torch.Tensor, frozenset[int]]] = {}

    def mask(self, t: torch.Tensor) -> torch.Tensor:
        key, nbytes = storage_key(t), _storage_nbytes(_untyped_storage(t))
        mask = self.masks.get(key)
        if mask is None or mask.numel() != nbytes or _dead(self.met, key):  # first seen in this forward (an address
            # a storage that died in it had is another storage): made before it (changed since?)
            start = self.origins.recall(t, verify=True) if self.origins is not None else STALE
            mask = self.masks[key] = torch.full((nbytes,), start, dtype=_uint8, device=t.device)
            self.kinds[key] = {start}
            unset = self.origins.unset_of(t) if self.origins is not None else None
            if unset is not None:  # bytes an earlier phase allocated and nothing wrote since: still unwritten
                mask[unset] = UNSET
                self.kinds[key].add(UNSET)
            if self.origins is not None:
                self.met[key] = self.origins.handle(t)
        return mask

    def fresh(self, t: torch.Tensor) -> None:
        """``t`` came out of a torch op: a storage not met before was allocated by it (UNSET, all of it)."""
        if t.numel() and not self.seen(t):
            self.mask(t).fill_(UNSET)
            self.kinds[storage_key(t)] = {UNSET}

    def forget(self, key: tuple[str, int]) -> None:
        """Nothing is known at ``key`` any more (the storage there moved: ``moved``)."""
        for known in (self.masks, self.kinds, self.met):
            known.pop(key, None)

    def holds_unset(self, t: torch.Tensor) -> bool:
        """Whether any byte ``t`` covers is one nothing wrote."""
        return UNSET in self.classes(t)

    def keep_unset(self, t: torch.Tensor) -> None:
        """``t`` (a parameter or buffer, just marked): its bytes an earlier phase allocated and nothing wrote stay
        unwritten (a buffer ``torch.empty`` in ``__init__`` is no parameter's data: the twenty-first red team read
        its noise)."""
        unset = self.origins.unset_of(t) if self.origins is not None else None
        if unset is not None:
            self.mask(t)[unset] = UNSET
            self.kinds[storage_key(t)].add(UNSET)

    def unset_flags(self, t: torch.Tensor) -> torch.Tensor | None:
        """One flag per byte of ``t``'s storage: nothing has written it (None: no such byte)."""
        return (self.mask(t) == UNSET) if UNSET in self.storage_kinds(t) else None

    def unset_by_key(self, key: tuple[str, int]) -> torch.Tensor | None:
        """One flag per byte of the storage at ``key``: nothing has written it; None where no byte is so (``kinds``
        keeps a class once held, so most outputs list UNSET: a full-size flag mask for each on the device would be
        kept by ``Origins.absorb`` and searched in every later phase)."""
        mask = self.masks.get(key)
        if mask is None or UNSET not in self.kinds.get(key, ()):
            return None
        flags = mask == UNSET
        return flags if bool(flags.any()) else None

    def stored(self, t: torch.Tensor, flags: torch.Tensor) -> None:
        """Nothing: ``credit_launch`` takes the stores (``CoarseProvenance.stored``)."""

    def classes_of_storage(self, t: torch.Tensor) -> tuple[torch.Tensor, set[int]]:
        """The classes of every byte of ``t``'s storage, and the classes it may hold (a copy: ``regrown``)."""
        return self.mask(t).clone(), set(self.storage_kinds(t))

    def regrown(self, t: torch.Tensor, held: int, before: tuple[torch.Tensor, set[int]]) -> None:
        """``t``'s storage was resized from ``held`` bytes, whose classes were ``before``: its first bytes keep them,
        what it added is unset."""
        mask, kinds = before
        now = self.mask(t)
        kept = min(held, now.numel(), mask.numel()) if mask is not None else 0
        if kept:
            now[:kept] = mask[:kept]
        self.kinds[storage_key(t)] = (set(kinds) if kept else set()) | ({UNSET} if now.numel() > kept else set())

    def region(self, t: torch.Tensor) -> torch.Tensor:
        """The mask bytes of exactly the bytes ``t`` covers, shaped ``(*t.shape, itemsize)``."""
        return byte_region(self.mask(t), t)

    def mark(self, t: torch.Tensor, cls: int) -> None:
        if t.numel():
            self.region(t).fill_(cls)
            self._wrote(t, {cls})
            if cls in (INPUT, PARAM):
                self.originals.append(t)

    def moved_input(self, t: torch.Tensor) -> bool:
        """Whether a kernel's data ``t`` is, by value, this forward's inputs or parameters moved: under an index map,
        or their bits in another dtype (``copies.copied_from`` with them as the sources). A kernel that shifted the
        input one place along, or stored its bits as integers, then had torch transpose that into the output, got
        torch's transpose credited as its own (the eleventh red team, strict mode): a copy of an input at its own
        place is an echo, and torch's re-layout of an echo was already torch's."""
        sources = [(s, self.mask(s)) for s in self.originals if s.numel() and s.device == t.device]
        if not sources or not t.numel():
            return False
        every = torch.ones(t.shape, dtype=torch.bool, device=t.device)
        return copied_from(t, every, sources, _ORIGINAL.to(t.device)) is not None

    def _wrote(self, t: torch.Tensor, classes: set[int]) -> None:
        """``t``'s bytes now hold ``classes``: its storage's ``kinds`` become them if ``t`` covers it all."""
        key = storage_key(t)
        if t.is_contiguous() and t.numel() * t.element_size() == self.masks[key].numel():
            self.kinds[key] = set(classes)
        else:
            self.kinds[key] |= classes

    def classes(self, t: torch.Tensor) -> set[int]:
        if not t.numel():
            return set()
        mask = self.mask(t)
        key = (id(mask), mask._version, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.element_size())
        kept = self._classes.get(key)
        if kept is not None and kept[0] is mask:
            return set(kept[1])
        found = frozenset(torch.unique(byte_region(mask, t)).tolist())
        if len(self._classes) >= CLASSES_KEPT:
            self._classes.clear()
        self._classes[key] = (mask, found)
        return set(found)

    def storage_kinds(self, t: torch.Tensor) -> set[int]:
        """The classes ``t``'s whole storage may hold (a kernel may read past the view it was handed)."""
        self.mask(t)
        return self.kinds[storage_key(t)]

    def seen(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s storage (at its current size) was met before in this forward."""
        key = storage_key(t)
        mask = self.masks.get(key)
        return mask is not None and mask.numel() == _storage_nbytes(_untyped_storage(t)) and not _dead(self.met, key)

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """``dst`` now holds a torch copy of ``src``. An identity copy keeps the classes element for element; a
        cast (same shape, both dense, another dtype) keeps them too, except that inputs, parameters, echoes and
        earlier data become ``COPIED``; a copy in another layout takes ``copy_class`` of all the source holds."""
        if not dst.numel():
            return
        dense = dst.shape == src.shape and dst.is_contiguous() and src.is_contiguous()
        if dense and dst.dtype == src.dtype:
            self.region(dst).copy_(self.region(src))
            self._wrote(dst, self.classes(dst))
            return
        if not dense:
            cls = relayout_class(self.classes(src), dst, src, TORCH in self.taints)
            if cls in (KERNEL, RELAID) and self.moved_input(src):
                cls = COPIED  # a kernel's copy of an input, re-laid out by torch: torch did the layout work
            self.mark(dst, cls)
            self.remember(dst, {cls})
            self._carry_unset(dst, src)
            return
        source = self.region(src)
        element = torch.full(source.shape[:-1], COPIED, dtype=_uint8, device=source.device)
        element[(source == TORCH).any(dim=-1)] = TORCH
        element[(source == FOREIGN).any(dim=-1)] = FOREIGN
        element[torch.isin(source, _OWN.to(source.device)).all(dim=-1)] = KERNEL
        element[(source == UNSET).any(dim=-1)] = UNSET  # a byte nothing wrote: the element's value is undefined
        relaid = (source == RELAID).any(dim=-1) & torch.isin(source, _OWN_RELAID.to(source.device)).all(dim=-1)
        element[relaid] = RELAID  # a cast of torch's re-layout of a kernel's data: still that
        self.region(dst).copy_(element.unsqueeze(-1).expand(*element.shape, dst.element_size()))
        classes = set(torch.unique(element).tolist())
        self._wrote(dst, classes)
        self.remember(dst, classes)

    def _carry_unset(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """The elements of a copy in another layout whose source element holds a byte nothing wrote are unset too
        (a copy of a partly written buffer took one class for all of it: the twenty-first red team read noise
        through ``scratch[:, :128].contiguous()``); a source that cannot be matched element for element makes all
        of ``dst`` unset."""
        if UNSET not in self.classes(src):
            return
        flags = (self.region(src) == UNSET).any(dim=-1).to(dst.device)  # a copy across devices: dst's flags
        try:
            flags = torch.broadcast_to(flags, dst.shape)
        except RuntimeError:
            flags = torch.ones(dst.shape, dtype=torch.bool, device=flags.device)
        self.region(dst)[flags] = UNSET
        self.kinds[storage_key(dst)].add(UNSET)

    def remember(self, t: torch.Tensor, classes: set[int]) -> None:
        """A torch op just wrote ``t`` with ``classes``: where that is laundered data a launch handed it would not be
        tainted by (permissive mode's torch results; in either mode, torch's copies of inputs in another layout or
        dtype), its values and classes as made are kept for the forward's end (``settle_outputs``): a kernel's output
        may reach them through scratch buffers and arithmetic that undoes itself, handed none of them."""
        if t.numel() and classes & (_REMEMBERED - set(self.taints)):
            self.made.append((t.detach().clone().reshape(-1), self.region(t).clone().reshape(-1)))

    def single(self, t: torch.Tensor, elems: torch.Tensor, given: list) -> None:
        """A launch wrote too few elements of ``t`` (``elems``) to fit an index map in ``t``'s shape (one; or two
        of a matrix: a red team copied two per launch): kept with the laundered data it was handed, as it was then,
        so that such launches into one storage are judged together, flat (``settle_singles``)."""
        flat = _flat(t)
        if flat is None:
            return
        key = storage_key(t)
        entry = self.singles.setdefault(key, {"flat": flat, "written": torch.zeros(flat.shape, dtype=torch.bool,
                                                                                    device=t.device), "sources": []})
        torch.as_strided(entry["written"], t.shape, t.stride(), t.storage_offset())[elems] = True
        for src in given:
            src_key = storage_key(src)
            if not src.untyped_storage().nbytes() or not self.storage_kinds(src) & LAUNDERED:
                continue
            if src_key not in self._snapshots:  # once per forward: the data as the first such launch read it
                whole = torch.empty(0, dtype=_uint8, device=src.device).set_(src.untyped_storage())
                size = src.element_size()
                usable = whole.numel() - whole.numel() % size
                self._snapshots[src_key] = (whole[:usable].clone().view(src.dtype), self.mask(src)[:usable].clone())
            if src_key not in entry["sources"]:
                entry["sources"].append(src_key)

    def settle_singles(self) -> None:
        """After the forward: the one-element writes into each storage, taken together, are a copy if they are
        one (``copies.copied_from`` over the snapshots of what those launches were handed): a kernel launched once
        per output element to move torch's values was never a copy launch by launch (``MIN_COPY_ELEMENTS``)."""
        for key, entry in self.singles.items():
            flat, written = entry["flat"], entry["written"]
            if key not in self.masks:
                continue
            still = written & (self.region(flat) == KERNEL).all(dim=-1)  # not since rewritten by a bigger launch
            if int(still.sum()) < MIN_COPY_ELEMENTS or not entry["sources"]:
                continue
            sources = _on(flat, [self._snapshots[k] for k in entry["sources"]])
            source = copied_from(flat, still, sources, _LAUNDERED) if sources else None
            if source is not None:
                self.region(flat)[still] = source
                self.kinds[key].add(source)
        self.singles, self._snapshots = {}, {}

    def settle_outputs(self, outputs: list) -> None:
        """After the forward (and ``settle_singles``): the elements of each output a kernel wrote are searched once
        more, against all the laundered data made in the forward, as made (``made``), whether or not a launch was
        handed it. A launch's own copy search sees only what it was handed, as it is after the launch: torch's answer
        negated in place twice, negated into a scratch and back, scaled and unscaled, cloned between two in-place
        negations, moved one element per launch (each handed its own clone; in a shuffled order; through one-element
        scratch tensors), came out a kernel's (the seventh and eighth red teams, permissive mode). Whatever the path,
        an output that repeats such data under index maps is a copy of it. Not seen: an arbitrary permutation
        (``copies``)."""
        if not self.made:
            return
        sources = self.made
        for t in outputs:
            if not t.numel() or storage_key(t) not in self.masks:
                continue
            region = self.region(t)
            elems = (region == KERNEL).all(dim=-1)
            here = _on(t, sources)
            if int(elems.sum()) < MIN_COPY_ELEMENTS or not here:
                continue
            source = copied_from(t, elems, here, _LAUNDERED)
            if source is not None:
                region[elems] = source
                self.kinds[storage_key(t)].add(source)


def _on(t: torch.Tensor, sources: list) -> list:
    """The copy search's ``sources`` (tensor, classes) on ``t``'s device: a copy across devices is torch's own op,
    judged where torch made it (``copy``), and a search across devices cannot run."""
    return [source for source in sources if source[0].device == t.device]


def moved(key: tuple[str, int], ref: Any) -> bool:
    """Whether the storage behind ``ref`` (a weak reference kept under ``key``, its address when met) is no longer
    at that address: ``resize_`` grows a storage in place, on new memory, so what was said of it under its old
    address describes nothing there now (a table grown in ``__init__`` read as poison when handed to a launch)."""
    storage = torch.UntypedStorage._new_with_weak_ptr(ref.cdata)
    return storage is None or (storage.device.type, _storage_ptr(storage)) != key


def byte_region(flat: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The entries of ``flat`` (one per byte of ``t``'s storage) for exactly the bytes ``t`` covers, shaped
    ``(*t.shape, itemsize)``."""
    size = t.element_size()
    return torch.as_strided(flat, (*t.shape, size), (*(s * size for s in t.stride()), 1), t.storage_offset() * size)


def _dead(met: dict, key: tuple[str, int]) -> bool:
    """Whether the storage first met at ``key`` (its address) is gone: a storage there now is another one (an
    allocator hands a freed address out again, often within one forward)."""
    handle = met.get(key)
    return handle is not None and handle[0].expired()


def _flat(t: torch.Tensor) -> torch.Tensor | None:
    """The whole storage behind ``t`` as one flat tensor of ``t``'s dtype (None where its size does not divide)."""
    size, nbytes = t.element_size(), t.untyped_storage().nbytes()
    if nbytes % size:
        return None
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), 0, (nbytes // size,), (1,))


class CoarseProvenance:
    """``Provenance``'s rules with one set of classes per storage, kept on the host (timed calls, and the model's
    construction). A storage first met as an argument starts as ``origins`` recalls it (STALE without origins); a
    write that covers a whole storage replaces its set, a partial one adds to it. Which bytes nothing wrote is
    kept per byte for the host's storages, and with ``per_byte`` (a phase no timer measures: the import, a
    construction) for a device's too, on the device: else a GPU's construction judged a partly written allocation
    as a whole (an ``__init__`` reading the written part of a ``torch.empty`` with torch was refused there, accepted
    on the CPU) and passed none of it on to the forwards."""

    def __init__(self, origins: Any = None, taints: tuple[int, ...] = TAINTS_STRICT, per_byte: bool = False) -> None:
        self.sets: dict[tuple[str, int], set[int]] = {}
        self.origins, self.taints = origins, taints
        self.met: dict[tuple[str, int], Any] = {}
        # storages with bytes nothing wrote: one flag per byte (``unset_flags``; under the interpreter the
        # launches' stores clear them, ``stored``): what a construction allocated and left, for its forwards
        self.unset: dict[tuple[str, int], torch.Tensor] = {}
        self.per_byte = per_byte

    def _unset_region(self, t: torch.Tensor, value: bool) -> None:
        flags = self.unset.get(storage_key(t))
        if flags is not None and t.numel():
            byte_region(flags, t).fill_(value)

    def holds_unset(self, t: torch.Tensor) -> bool:
        """Per byte where that is kept (``_flagged``; the twenty-second red team: an op in ``__init__`` reading only
        the written part of a partly written allocation was refused); by the storage's set elsewhere (a device's
        storage in a timed call)."""
        if not t.numel():
            return False
        flags = self.unset.get(storage_key(t))
        if flags is not None:
            return bool(byte_region(flags, t).any())
        return t.device.type != "cpu" and UNSET in self._set(t)

    def keep_unset(self, t: torch.Tensor) -> None:
        unset = self.origins.unset_of(t) if self.origins is not None else None
        if unset is not None:
            self.unset[storage_key(t)] = unset
            self._set(t).add(UNSET)

    def unset_flags(self, t: torch.Tensor) -> torch.Tensor | None:
        self._set(t)
        flags = self.unset.get(storage_key(t))
        return flags if flags is not None and bool(flags.any()) else None

    def unset_by_key(self, key: tuple[str, int]) -> torch.Tensor | None:
        flags = self.unset.get(key)
        return flags if flags is not None and bool(flags.any()) else None

    def stored(self, t: torch.Tensor, flags: torch.Tensor) -> None:
        """A launch stored to the bytes of ``t``'s storage ``flags`` names (``bounds.Stores``): they are written."""
        key = storage_key(t)
        unset = self.unset.get(key)
        if unset is not None:
            unset &= ~flags
            if not bool(unset.any()):
                del self.unset[key]
                self._set(t).discard(UNSET)

    def _covers(self, t: torch.Tensor) -> bool:
        return t.numel() * t.element_size() == _storage_nbytes(_untyped_storage(t)) and t.is_contiguous()

    def _set(self, t: torch.Tensor) -> set[int]:
        key = storage_key(t)
        found = self.sets.get(key)
        if found is None or _dead(self.met, key):  # new, or at the address of one that died in this phase
            found = self.sets[key] = {self.origins.recall(t) if self.origins is not None else STALE}
            self.unset.pop(key, None)
            if self.origins is not None:
                self.met[key] = self.origins.handle(t)
                unset = self.origins.unset_of(t)
                if unset is not None:
                    self.unset[key] = unset
                    found.add(UNSET)
        return found

    def _flagged(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s storage's unwritten bytes are kept per byte (the host's; a device's with ``per_byte``)."""
        return t.device.type == "cpu" or self.per_byte

    def _fresh_flags(self, t: torch.Tensor, value: bool = True) -> None:
        if self._flagged(t):
            self.unset[storage_key(t)] = torch.full((_storage_nbytes(_untyped_storage(t)),), value, dtype=torch.bool,
                                                    device=t.device)

    def fresh(self, t: torch.Tensor) -> None:
        if t.numel() and not self.seen(t):
            self._set(t)
            self.sets[storage_key(t)] = {UNSET}
            self._fresh_flags(t)

    def _write(self, t: torch.Tensor, classes: set[int]) -> None:
        if UNSET in classes and storage_key(t) not in self.unset:
            self._fresh_flags(t, False)
        self._unset_region(t, UNSET in classes)
        if self._covers(t):
            self._set(t)
            self.sets[storage_key(t)] = set(classes)
        else:
            self._set(t).update(classes)

    def mark(self, t: torch.Tensor, cls: int) -> None:
        if t.numel():
            self._write(t, {cls})

    def storage_kinds(self, t: torch.Tensor) -> set[int]:
        return self._set(t)

    def forget(self, key: tuple[str, int]) -> None:
        for known in (self.sets, self.met, self.unset):
            known.pop(key, None)

    def classes_of_storage(self, t: torch.Tensor) -> tuple[torch.Tensor | None, set[int]]:
        flags = self.unset.get(storage_key(t))
        return (flags.clone() if flags is not None else None), set(self._set(t))

    def regrown(self, t: torch.Tensor, held: int, before: tuple[torch.Tensor | None, set[int]]) -> None:
        nbytes = _storage_nbytes(_untyped_storage(t))
        grew = nbytes > held
        key = storage_key(t)
        self.sets[key] = (set(before[1]) if held and before[1] else set()) | ({UNSET} if grew else set())
        if self._flagged(t) and (grew or before[0] is not None):
            flags = torch.ones(nbytes, dtype=torch.bool, device=t.device)
            kept = min(held, nbytes)
            flags[:kept] = before[0][:kept] if before[0] is not None and before[0].numel() >= kept else False
            self.unset[key] = flags

    def launched(self, t: torch.Tensor, taint: int | None = None) -> None:
        """``t``'s storage was handed to a launch, which may have written any of it: it is the kernel's (or the
        ``taint`` the launch passes on), except torch-made or foreign data it may not have overwritten (without
        snapshots that cannot be told, so it stays). Torch's results stay only where torch compute is refused (strict
        mode, where a launch handed them is tainted anyway): in permissive mode torch computing and a kernel working
        in place on its result is honest (a cuBLAS GEMM, then an epilogue kernel), which a timed call cannot tell
        from a kernel that left it as it was; the secret share of watched calls and the correctness trials can."""
        kept = self._set(t) & ({COPIED, FOREIGN} | ({TORCH} & set(self.taints)))
        if storage_key(t) in self.unset:
            kept.add(UNSET)  # until the launch's stores say which bytes it wrote (``stored``)
        self.sets[storage_key(t)] = {KERNEL if taint is None else taint} | kept

    def classes(self, t: torch.Tensor) -> set[int]:
        return set(self._set(t)) if t.numel() else set()

    def seen(self, t: torch.Tensor) -> bool:
        key = storage_key(t)
        return key in self.sets and not _dead(self.met, key)

    def remember(self, t: torch.Tensor, classes: set[int]) -> None:
        """Nothing: a coarse watch keeps no values (``Provenance.remember``)."""

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        if not dst.numel():
            return
        classes = self.classes(src)
        same_layout = (dst.dtype == src.dtype and dst.shape == src.shape and dst.is_contiguous()
                       and src.is_contiguous())
        unset = self.unset.get(storage_key(src))
        partly_unset = unset is not None and src.numel() and bool(byte_region(unset, src).any())
        carried = byte_region(unset, src).clone() if partly_unset and same_layout else None
        written = classes if same_layout else {relayout_class(classes, dst, src, TORCH in self.taints)}
        self._write(dst, written - {UNSET})
        if partly_unset:  # a copy of bytes nothing wrote holds nothing written
            if storage_key(dst) not in self.unset:
                self._fresh_flags(dst, False)
            flags = self.unset.get(storage_key(dst))
            if carried is not None and flags is not None:  # byte for byte (the interpreter copies each argument's
                byte_region(flags, dst).copy_(carried)     # storage onto itself after a launch: nothing changes)
            else:  # in another layout: all of it, to be safe
                self._unset_region(dst, True)
            self._set(dst).add(UNSET)


def copy_ends(name: str, inputs: list, outs: list) -> tuple[Any, Any]:
    """(destination, source) of a copy op: ``copy_(dst, src)``, ``_copy_from(src, dst)``, else ``op(src) -> out``."""
    if name == "copy_" and len(inputs) > 1:
        return inputs[0], inputs[1]
    if name.startswith("_copy_from") and len(inputs) > 1:
        return inputs[1], inputs[0]
    return (outs[0] if outs else None), (inputs[0] if inputs else None)


def layout_problem(i: int, value: torch.Tensor, sources: list[torch.Tensor] = ()) -> str | None:
    """A broadcast view, or a transposed layout that did the task's work, as an output (slices and reshapes of a
    kernel's output are fine).

    A permuted layout is the kernel's to choose when it is a whole block of memory (``torch.empty_strided``, a
    column-major tile, ``c.t()`` of a kernel's own C^T) holding values the kernel computed. It is refused when the
    block, read in memory order, repeats an input's or parameter's (``sources``) values in theirs: then the layout,
    not a kernel, moved the data (a transpose task answered by copying x, or x plus an ulp, and viewing it as
    ``.t()``: within ``copies.COPY_RTOL``); and when it is no whole block (a strided view, e.g. a column slice)."""
    dims = [(stride, size) for stride, size in zip(value.stride(), value.shape) if size > 1]
    if any(stride == 0 for stride, _ in dims):
        return f"output {i} is a broadcast view (a stride of 0): write the values, not a view of fewer"
    if not any(a < b for (a, _), (b, _) in zip(dims, dims[1:])):
        return None
    transposed = f"output {i} is a transposed view (strides {tuple(value.stride())})"
    if not _dense(value):
        return f"{transposed}: a kernel must write it in order"
    if value.is_floating_point() and any(_same_in_memory(value, s) for s in sources if s.device == value.device):
        return (f"{transposed} whose memory holds an input's values in the input's own order: the layout moved the "
                "data, not a kernel")
    return None


def _dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill one block of memory, in some order of its dimensions."""
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _same_in_memory(out: torch.Tensor, src: torch.Tensor) -> bool:
    """Whether ``out``'s block of memory, read in order, holds ``src``'s values in its memory order (``src`` one
    block too), within twice the copy search's tolerance on the comparison's own scale (``|a - b| <= 2 rtol (1 +
    max(|b|, rms(b)))``, at least twice as wide as the comparison's band everywhere): a copy nudged to differ here
    must then also fail the comparison. (The band was ``rtol |b| + rtol mean|a|``, narrower than the comparison's
    for values near zero: issue 51's fresh red team nudged the smallest elements of a copy of x into that gap and
    returned its ``.t()`` as the transpose.)"""
    if src.numel() != out.numel() or src.dtype != out.dtype or not _dense(src) or not src.numel():
        return False
    a = torch.as_strided(out, (out.numel(),), (1,)).double()
    b = torch.as_strided(src, (src.numel(),), (1,)).double()
    rtol = COPY_RTOL.get(out.dtype, 2e-4)
    finite = torch.isfinite(b)
    rms = float(b[finite].square().mean().sqrt()) if finite.any() else 0.0
    band = 2 * rtol * (1 + torch.clamp(b.abs(), min=rms))
    return bool((((a - b).abs() <= band) | (a == b)).all())


def provenance_problem(i: int, classes: set[int], weak: bool = False) -> str | None:
    """Why output ``i``, whose bytes have ``classes``, is not a kernel's work, or None. ``weak`` (timed calls, in
    memory that is not poisoned: a kernel that rewrites the bytes already there changes none): only torch-made
    bytes are refused."""
    refused = classes & (WEAK_NOT_KERNELS if weak else NOT_KERNELS)
    if refused:
        return (f"output {i} holds values torch computed or copied, values from outside torch (numpy, Python "
                f"lists, a table of Python numbers filled in or passed to kernels, memory the verifier never saw "
                f"written) or values made before this forward pass "
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


def launch_taint(prov: Provenance | CoarseProvenance, given: list) -> int | None:
    """What a launch handed ``given`` passes on (``taint_of`` the classes their storages may hold), or None."""
    kinds: set[int] = set()
    for t in given:
        kinds |= prov.storage_kinds(t)
    if RELAID in kinds:  # torch's re-layout of a kernel's data (strict mode only): what it feeds is torch's work
        kinds.add(TORCH)
    return taint_of(kinds, prov.taints)


def credit_launch(prov: Provenance, watched: list, given: list, before: dict, storage_bytes: Any,
                  taint: int | None = None, stored: Any = None) -> bool:
    """After a launch: the bytes it changed (``before`` its snapshot of each watched storage, ``storage_bytes`` the
    flat view of one) are ``KERNEL``'s, whole elements at a time (a value the kernel wrote may share some bytes
    with what was there before), unless the launch passes on a ``taint`` (it was handed foreign or torch-made
    data: ``launch_taint``, taken before it ran) or only copied an argument's data it may not pass on
    (``copies.copied_from``: by value, wherever the data sat in the argument's storage). ``stored`` (under the CPU
    interpreter, ``bounds.Stores.bytes_of``: the bytes of a storage the launch stored to) adds the unset bytes it
    stored the very value of: the allocation noise (``scramble.py``) held what an honest kernel wrote there; and
    the bytes of a copy of an input it stored the same value over (an in-place kernel on ``x.clone()`` where the op
    is the identity on this trial's values, hardtanh on the x0.01 trial: the twenty-fourth red team's honest h04).
    Neither can launder: what was there is noise or the input itself, never a computed answer.

    Returns whether, with ``stored``, a byte changed that no store of the launch explains: under the interpreter
    every byte a kernel writes is one of its stores, so host code the launch ran wrote it without a torch op (the
    twenty-seventh red team's grid function, through a storage's ``_set_from_file``); such bytes are not credited."""
    changed_in: dict[tuple[str, int], torch.Tensor] = {}
    unexplained = False
    for t in watched:
        key = storage_key(t)
        if key not in changed_in:
            changed = changed_in[key] = before[key] != storage_bytes(t)
            mask = prov.mask(t)
            if stored is not None:  # where nothing or an input's copy was: a rewrite of other data is no work
                by_kernel = stored(t)
                if bool((changed & ~by_kernel).any()):
                    unexplained = True
                    changed &= by_kernel
                changed |= by_kernel & ((mask == UNSET) | (mask == INPUT))
            mask[changed] = KERNEL if taint is None else taint
            prov.kinds[key].add(KERNEL if taint is None else taint)
    copies = []
    for t in watched:
        changed = changed_in[storage_key(t)]
        if t.numel() and bool(changed.any()):
            elems = _elements(changed, t)
            prov.region(t)[elems] = KERNEL if taint is None else taint
            if taint is None and int(elems.sum()) >= max(MIN_COPY_ELEMENTS, t.dim() + 1):
                copies.append((t, elems))
            elif taint is None:  # too few to fit an index map in t's shape: judged with the forward's other ones
                prov.single(t, elems, given)
    # every storage handed, an empty view's too: the copy search reads whole storages (a kernel handed ``ans[:0]``
    # and an offset copied all of ``ans``); one that may hold no laundered byte (its ``kinds``) has nothing to copy
    sources = [(src, prov.mask(src)) for src in given
               if src.untyped_storage().nbytes() and prov.storage_kinds(src) & LAUNDERED]
    for t, elems in copies:  # after every view is credited: a copy seen through any view of a storage stays one
        here = _on(t, sources)
        source = copied_from(t, elems, here, _LAUNDERED, prov.storage_kinds) if here else None
        if source is not None:
            prov.region(t)[elems] = source
            prov.kinds[storage_key(t)].add(source)
            continue
        echo = echoes(t, elems, given, lambda src, dst=t: bool(prov.classes(src) & {INPUT, PARAM}) and
                      storage_key(src) != storage_key(dst))
        if echo is not None:
            prov.region(t)[echo] = ECHO
            prov.kinds[storage_key(t)].add(ECHO)
    return unexplained
