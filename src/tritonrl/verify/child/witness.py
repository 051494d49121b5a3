"""Nothing a forward handles may change unseen: what the watch keeps of each storage, and the checks (candidate
child). A storage the watch saw written has a *shadow*, a copy of its bytes as the watch last saw them; any other
storage the forward reads (inputs, parameters, earlier data) a keyed checksum (``quiet.py``). Before each launch and
at the end of the forward both must still match: bytes that changed came from code the watch cannot see (a thread,
numpy through a raw address, a silenced monitor): ``record.unseen``, flag ``tampering``. Called by the monitor,
under its ``internal`` guard.
"""

from __future__ import annotations

from typing import Any

import torch

from tritonrl.verify.child.provenance import storage_key
from tritonrl.verify.child.quiet import checksum

_equal = torch.equal
_empty = torch.empty
_set = torch.Tensor.set_
_clone = torch.Tensor.clone


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    return _set(_empty(0, dtype=torch.uint8, device=t.device), t.untyped_storage())


def begin(record: Any, quiet: list[torch.Tensor], changed: bool) -> None:
    """A forward begins: the inputs, parameters and buffers are quiet; ``changed``: one of the model's changed
    unseen since its construction."""
    record.quiet = {storage_key(t): (t, checksum(t)) for t in quiet}
    if changed:
        record.unseen = ("a parameter or buffer changed between the model's construction and this forward where "
                         "the verifier could not see it")


def keep(record: Any, t: torch.Tensor, protected: bool) -> None:
    """The watch just saw ``t``'s storage written: its shadow (an input's or a parameter's: its checksum)."""
    key = storage_key(t)
    if protected:
        record.quiet[key] = (t, checksum(t))
        return
    record.quiet.pop(key, None)
    flat = _storage_bytes(t)
    record.shadows[key] = (flat, _clone(flat))


def check_quiet(record: Any, given: list[torch.Tensor] | None = None) -> None:
    """Storages the forward reads but the watch never saw written: those ``given`` to a launch join them the first
    time, and none may have changed since its checksum was taken."""
    for t in given or ():
        key = storage_key(t)
        if key not in record.quiet and key not in record.shadows:
            record.quiet[key] = (t, checksum(t))
    for t, total in list(record.quiet.values()):
        if record.unseen is None and checksum(t) != total:
            record.unseen = ("memory the forward pass reads changed where the verifier could not see it "
                             "(not a Triton launch or a torch op: native code through a raw address, a thread)")


def check_shadows(record: Any, tensors: list[torch.Tensor] | None = None) -> None:
    """Memory the watch saw written must hold what it saw (of ``tensors``' storages, or all)."""
    if record.unseen is not None or not record.shadows:
        return
    keys = record.shadows.keys() if tensors is None else [storage_key(t) for t in tensors]
    for key in list(keys):
        entry = record.shadows.get(key)
        if entry is None:
            continue
        flat, seen = entry
        if flat.numel() != seen.numel() or not _equal(flat, seen):
            changed = int((flat != seen).sum()) if flat.numel() == seen.numel() else "all"
            record.unseen = ("memory the forward pass wrote changed where the verifier could not see it (not a "
                             f"Triton launch or a torch op: a thread, numpy, code that silenced the watch); {changed}"
                             " bytes")
            return
