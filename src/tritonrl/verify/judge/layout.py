"""Where one call's values sit in the arena the judge shares with a candidate's child, and how the child is told.

    layout = Layout.of(reference)          # slots for the constructor's tensors, the inputs and the outputs
    layout.write(arena, inputs, device)    # a call's inputs into their slots, finished before the child is told
    layout.output(arena, 0)                # output 0 as the child copied it

A slot is ``{"offset", "dtype", "shape"}``; a value that is no tensor travels as JSON (``{"value": ...}``) or as a
dtype name (``{"dtype": "float16"}``). The child (``tritonrl.verify.child.harness``) reads the same descriptors.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from tritonrl.errors import TaskError
from tritonrl.verify.judge.compare import Mismatch
from tritonrl.verify.judge.references import Reference
from tritonrl.verify.shared.arena import ALIGN, Arena


class Layout:
    """Where one call's values sit in the arena: constructor tensors, inputs, outputs (slots), and how the
    child is told (descriptors: a slot, a dtype, or a JSON value)."""

    def __init__(self) -> None:
        self.nbytes = 0
        self.init: list[dict] = []
        self.inputs: list[dict] = []
        self.outputs: list[dict] = []
        self._init_tensors: list[tuple[dict, torch.Tensor]] = []

    @classmethod
    def of(cls, ref: Reference) -> Layout:
        layout = cls()
        layout.init = [layout.describe(v, keep=True) for v in ref.init_args]
        layout.inputs = [layout.describe(v) for v in ref.inputs]
        layout.outputs = [layout.slot(o) for o in ref.outputs]
        return layout

    def slot(self, t: torch.Tensor) -> dict:
        slot = {"offset": self.nbytes, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        self.nbytes += _round(max(1, t.numel() * t.element_size()))
        return slot

    def describe(self, value: Any, keep: bool = False) -> dict:
        if isinstance(value, torch.Tensor):
            slot = self.slot(value)
            if keep:
                self._init_tensors.append((slot, value))
            return {"slot": slot}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TaskError(f"an argument of type {type(value).__name__} cannot be handed to the candidate") from None
        return {"value": value}

    def write(self, arena: Arena, inputs: list, device: str) -> None:
        """The call's inputs (and constructor tensors) into their slots, finished before the child is told."""
        for slot, value in self._init_tensors:
            view(arena, slot).copy_(value)
        for d, value in zip(self.inputs, inputs):
            if "slot" in d:
                view(arena, d["slot"]).copy_(value)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def read_inputs(self, arena: Arena) -> list:
        return [view(arena, d["slot"]) if "slot" in d else d.get("value") for d in self.inputs]

    def output(self, arena: Arena, i: int) -> torch.Tensor:
        return view(arena, self.outputs[i])


class Described:
    """An output the child did not copy (wrong shape, dtype or device): what it said it was."""

    def __init__(self, meta: dict) -> None:
        self.meta = meta


def compare_described(i: int, described: Described, expected: torch.Tensor) -> Mismatch:
    from tritonrl.verify.shared.flags import Flag

    meta = described.meta
    if meta.get("device") != expected.device.type:
        return Mismatch(Flag.DEVICE_MISMATCH, f"output {i} is on {meta.get('device')}, expected {expected.device.type}")
    if list(meta.get("shape") or []) != list(expected.shape):
        return Mismatch(Flag.SHAPE_MISMATCH, f"output {i} has shape {tuple(meta.get('shape') or [])}, expected "
                                             f"{tuple(expected.shape)}")
    return Mismatch(Flag.DTYPE_MISMATCH, f"output {i} has dtype {meta.get('dtype')}, expected "
                                         f"{str(expected.dtype).removeprefix('torch.')}")


def view(arena: Arena, slot: dict) -> torch.Tensor:
    from tritonrl.verify.shared.trial import torch_dtype

    return arena.tensor(slot["offset"], torch_dtype(slot["dtype"]), slot["shape"])


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
