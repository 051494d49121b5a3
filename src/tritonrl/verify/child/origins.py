"""What the watch knows of memory made before a forward pass: where each storage's data came from (candidate child).

The monitor watches the candidate's import, each construction of ``ModelNew`` by the harness and every forward
(``Monitor.phase``, ``Monitor.run_forward``). At the end of each, every storage it met is remembered here, weakly
(a storage freed since, and memory reused at its address, is not confused with it), as one class:

- ``STALE``: made before the forward, from what the watch saw: allocations, fills, copies, kernels' writes;
- ``TORCH``: holds values torch computed (a table built with ``F.gelu`` in ``__init__``: docs/verifier.md,
  "init-time tables");
- ``FOREIGN``: holds data from outside torch (numpy arrays, Python lists).

A storage never met (numpy's memory wrapped by ``torch.from_numpy`` or ``from_dlpack``, memory written by native
code) is ``FOREIGN``. Memory the harness made is vouched for (``trust``: the arena). Buffers equal to one of the
reference model's own buffers are the task's state, whatever computed them (``vouch_state``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from tritonrl.verify.child.provenance import FOREIGN, STALE, TORCH, storage_key, taint_of
from tritonrl.verify.trial import digest

_untyped_storage = torch.Tensor.untyped_storage
_storage_nbytes = torch.UntypedStorage.nbytes
_WeakRef = StorageWeakRef


class Origins:
    """Storage -> the class a forward starts it with (``recall``); filled from each watched phase (``absorb``)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int], tuple[Any, int, int]] = {}  # key -> (weak ref, nbytes, class)
        self.pinned: set[tuple[str, int]] = set()  # the harness's memory: its class never changes

    @staticmethod
    def handle(t: torch.Tensor) -> tuple[Any, int]:
        """What a phase keeps of a storage it met: a weak reference and its size."""
        storage = _untyped_storage(t)
        return _WeakRef(storage), _storage_nbytes(storage)

    def recall(self, t: torch.Tensor) -> int:
        entry = self.entries.get(storage_key(t))
        storage = _untyped_storage(t)
        if entry is None or entry[0].expired() or entry[0].cdata != storage._cdata or \
                entry[1] != _storage_nbytes(storage):
            return FOREIGN
        return entry[2]

    def trust(self, t: torch.Tensor, cls: int = STALE, pin: bool = False) -> None:
        """Vouch for ``t``'s storage: made before any forward, by what the watch trusts. ``pin`` (the arena, all
        of it the judge's: this call's inputs, the last call's outputs as the harness copied them, constructor
        tensors): it stays ``cls`` whatever a forward does with it."""
        key = storage_key(t)
        self.entries[key] = (*self.handle(t), cls)
        if pin:
            self.pinned.add(key)

    def absorb(self, prov: Any) -> None:
        """After a watched phase: each storage it met, as the class of what it may hold, then drop the dead."""
        kinds = prov.kinds if hasattr(prov, "kinds") else prov.sets
        for key, (ref, nbytes) in prov.met.items():
            if not ref.expired() and key not in self.pinned:
                self.entries[key] = (ref, nbytes, taint_of(kinds.get(key, set()), (FOREIGN, TORCH)) or STALE)
        for key in [k for k, (ref, _, _) in self.entries.items() if ref.expired()]:
            del self.entries[key]
            self.pinned.discard(key)

    def vouch_state(self, model: torch.nn.Module, state: set[str]) -> None:
        """Buffers of ``model`` whose digest is among ``state`` (the reference model's buffers, from the judge)
        are the task's state: made before any forward like a parameter, whatever computed them."""
        for buf in model.buffers():
            if buf.numel() and digest(buf) in state:
                self.trust(buf)
