"""What the watch knows of memory made before a forward pass: where each storage's data came from (candidate child).

The monitor watches the candidate's import, each construction of ``ModelNew`` by the harness and every forward
(``Monitor.phase``, ``Monitor.run_forward``). At the end of each, every storage it met is remembered here, weakly
(a storage freed since, and memory reused at its address, is not confused with it), as one class:

- ``STALE``: made before the forward, from what the watch saw: allocations, fills, copies, kernels' writes;
- ``TORCH``: holds values torch computed (a table built with ``F.gelu`` in ``__init__``: docs/verifier.md,
  "init-time tables");
- ``FOREIGN``: holds data from outside torch (numpy arrays, Python lists).

A storage never met (numpy's memory wrapped by ``torch.from_numpy`` or ``from_dlpack``, memory written by native
code) is ``FOREIGN``, and so is one whose bytes changed since the phase that remembered it (a keyed checksum,
``quiet.checksum``: written through a raw address, where the watch cannot see). Memory the harness made is vouched
for (``trust``: the arena). Buffers equal to one of the reference model's own buffers are the task's state,
whatever computed them (``vouch_state``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from tritonrl.verify.child.provenance import FOREIGN, STALE, TORCH, moved, storage_key, taint_of
from tritonrl.verify.child.quiet import checksum, checksum_of_ref
from tritonrl.verify.shared.trial import digest

_untyped_storage = torch.Tensor.untyped_storage
_storage_nbytes = torch.UntypedStorage.nbytes
_WeakRef = StorageWeakRef


class Origins:
    """Storage -> the class a forward starts it with (``recall``); filled from each watched phase (``absorb``)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int], tuple[Any, int, int, Any]] = {}  # key -> (ref, nbytes, class, checksum)
        self.pinned: set[tuple[str, int]] = set()  # the harness's memory: its class never changes
        # storages with bytes a phase allocated and nothing wrote: one flag per byte (``unset_of``)
        self.unset: dict[tuple[str, int], torch.Tensor] = {}

    @staticmethod
    def handle(t: torch.Tensor) -> tuple[Any, int]:
        """What a phase keeps of a storage it met: a weak reference and its size."""
        storage = _untyped_storage(t)
        return _WeakRef(storage), _storage_nbytes(storage)

    def recall(self, t: torch.Tensor, verify: bool = False) -> int:
        """The class a forward starts ``t``'s storage with; ``verify``: FOREIGN if its bytes changed unseen."""
        entry = self._entry(t)
        if entry is None or (verify and self.changed(t)):
            return FOREIGN
        return entry[2]

    def _entry(self, t: torch.Tensor) -> tuple | None:
        entry = self.entries.get(storage_key(t))
        storage = _untyped_storage(t)
        if entry is None or entry[0].expired() or entry[0].cdata != storage._cdata or \
                entry[1] != _storage_nbytes(storage):
            return None
        return entry

    def unset_of(self, t: torch.Tensor) -> torch.Tensor | None:
        """The bytes of ``t``'s storage nothing has written since a phase allocated them (a copy), or None."""
        flags = self.unset.get(storage_key(t))
        if flags is None or self._entry(t) is None or flags.numel() != _storage_nbytes(_untyped_storage(t)):
            return None
        return flags.clone()

    def changed(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s storage holds other bytes than when a phase last remembered it (unknown: no)."""
        entry = self._entry(t)
        return entry is not None and entry[3] is not None and storage_key(t) not in self.pinned and \
            checksum(t) != entry[3]

    def trust(self, t: torch.Tensor, cls: int = STALE, pin: bool = False) -> None:
        """Vouch for ``t``'s storage: made before any forward, by what the watch trusts. ``pin`` (the arena, all
        of it the judge's: this call's inputs, the last call's outputs as the harness copied them, constructor
        tensors): it stays ``cls`` whatever a forward does with it."""
        key = storage_key(t)
        self.entries[key] = (*self.handle(t), cls, None)
        if pin:
            self.pinned.add(key)

    def absorb(self, prov: Any, sums: bool = False) -> None:
        """After a watched phase: each storage it met, as the class of what it may hold, then drop the dead.
        ``sums`` (a phase that may do device work: not a timed call): with its checksum, for ``changed``."""
        kinds = prov.kinds if hasattr(prov, "kinds") else prov.sets
        for key, (ref, nbytes) in prov.met.items():
            if not ref.expired() and key not in self.pinned:
                total = checksum_of_ref(ref) if sums else None
                self.entries[key] = (ref, nbytes, taint_of(kinds.get(key, set()), (FOREIGN, TORCH)) or STALE, total)
                unset = prov.unset_by_key(key)  # what the phase left unwritten stays so in the next (the
                if unset is not None:           # twenty-first red team read an `__init__` scratch's noise)
                    self.unset[key] = unset.clone()
                else:
                    self.unset.pop(key, None)
        for key in [k for k, (ref, *_) in self.entries.items() if ref.expired() or moved(k, ref)]:
            del self.entries[key]
            self.pinned.discard(key)
            self.unset.pop(key, None)

    def vouch_state(self, model: torch.nn.Module, state: set[str]) -> None:
        """Buffers of ``model`` whose digest is among ``state`` (the reference model's buffers, from the judge)
        are the task's state: made before any forward like a parameter, whatever computed them."""
        for buf in model.buffers():
            if buf.numel() and digest(buf) in state:
                self.trust(buf)
