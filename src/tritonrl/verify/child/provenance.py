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

STALE, UNSET, INPUT, PARAM, CONST, KERNEL, COPIED, TORCH = range(8)
CLASS_NAMES = ("stale", "unset", "input", "param", "const", "kernel", "copied", "torch")
FROM_INPUTS = (INPUT, KERNEL, COPIED, TORCH)  # classes whose values may carry this call's inputs
NOT_KERNELS = {STALE, COPIED, TORCH}  # what an output byte must not be, and what a copy kernel may not launder
COPY_RTOL = 1e-4                              # a kernel's writes this close to a torch-made argument are a copy


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

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> None:
        """``dst`` now holds a torch copy of ``src``: an identity copy keeps the classes element for element; a
        copy in another layout or dtype is ``COPIED`` unless it moves only kernel results and constants."""
        if not dst.numel():
            return
        same_layout = (dst.dtype == src.dtype and dst.shape == src.shape and dst.is_contiguous()
                       and src.is_contiguous())
        if same_layout:
            self.region(dst).copy_(self.region(src))
            return
        self.mark(dst, KERNEL if self.classes(src) <= {KERNEL, CONST} else COPIED)


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


def provenance_problem(i: int, classes: set[int]) -> str | None:
    if classes & NOT_KERNELS:
        return (f"output {i} holds values torch computed or copied, or made before this forward pass "
                f"({_names(classes & NOT_KERNELS)}), not values a Triton kernel computed in it")
    if KERNEL not in classes:
        return f"output {i} was not written by a Triton kernel launched in this forward pass"
    return None


def _names(classes: set[int]) -> str:
    return ", ".join(CLASS_NAMES[c] for c in sorted(classes))


def credit_launch(prov: Provenance, watched: list, given: list, before: dict, storage_bytes: Any) -> None:
    """After a launch: the bytes it changed (``before`` its snapshot of each watched storage, ``storage_bytes`` the
    flat view of one) are ``KERNEL``'s, unless the launch only copied a torch-made argument (``copied_from``)."""
    done = set()
    for t in watched:
        key = storage_key(t)
        if key in done:
            continue
        done.add(key)
        changed = before[key] != storage_bytes(t)
        if not bool(changed.any()):
            continue
        mask = prov.mask(t)
        mask[changed] = KERNEL
        source = copied_from(prov, t, changed, given)
        if source is not None:
            view_changed = torch.as_strided(changed, (*t.shape, t.element_size()),
                                            (*(s * t.element_size() for s in t.stride()), 1),
                                            t.storage_offset() * t.element_size())
            prov.region(t)[view_changed] = source

def copied_from(prov: Provenance, dst: torch.Tensor, changed: torch.Tensor, given: list) -> int | None:
    """The class (``STALE``/``COPIED``/``TORCH``) of an argument whose values ``dst``'s changed elements repeat
    at the same positions, or None."""
    size = dst.element_size()
    elems = torch.as_strided(changed, (*dst.shape, size), (*(s * size for s in dst.stride()), 1),
                             dst.storage_offset() * size).any(dim=-1).reshape(-1)
    count = int(elems.sum())
    if not count:
        return None
    for src in given:
        if src.numel() != dst.numel() or storage_key(src) == storage_key(dst):
            continue
        classes = prov.classes(src) & NOT_KERNELS
        if not classes or not (src.is_floating_point() or dst.is_floating_point()):
            continue
        a = dst.detach().reshape(-1)[elems].double()
        b = src.detach().reshape(-1)[elems].double()
        close = (a - b).abs() <= COPY_RTOL * (b.abs() + a.abs().mean() + 1e-30)
        if int(close.sum()) * 2 >= count:
            return max(classes)
    return None
