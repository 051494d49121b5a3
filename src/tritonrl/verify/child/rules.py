"""The runtime rules a watched forward pass must keep, judged from the monitor's record (candidate child).

``judge_record`` gives the first rule broken, in this order: the hooks are the ones installed, the result is a
plain tensor or a plain tuple/list of them, nothing was written where the watch cannot see, all the device work
was on the forward's stream and no CUDA graph was captured (``threads``: the timer could not own it), a Triton kernel was
launched, no value left torch for Python or numpy beyond what is allowed (``Monitor.exported``), no torch compute
(strict mode only: the one rule permissive mode relaxes, a style rule), and every output is a kernel's own work
(not sharing memory with an input or parameter, holding only bytes a kernel computed in this forward, not a
transposed or broadcast view). Permissive mode never skips the last ones: a token kernel over torch's answer is
what they stop, in every mode.
"""

from __future__ import annotations

from typing import Any

import torch

from tritonrl.verify.child.inert import type_name
from tritonrl.verify.child.provenance import layout_problem, provenance_problem

_Tensor = torch.Tensor
_untyped_storage = torch.Tensor.untyped_storage
_storage_ptr = torch.UntypedStorage.data_ptr
_storage_nbytes = torch.UntypedStorage.nbytes
MAX_OPS_REPORTED = 5


def storage_range(t: torch.Tensor) -> tuple[str, int, int]:
    storage = _untyped_storage(t)
    start = _storage_ptr(storage)
    return (t.device.type, start, start + _storage_nbytes(storage))


def output_values(output: Any) -> list | None:
    """The outputs as a list, if ``output`` is a plain tensor or a plain tuple/list (exact types: a subclass
    could compute when unpacked); None otherwise. Never calls anything of the candidate's."""
    kind = type(output)  # compared by identity: ``in`` would call a metaclass's ``__eq__``
    if kind is _Tensor:
        return [output]
    if kind is tuple or kind is list:
        return list(tuple.__iter__(output)) if kind is tuple else list(list.__iter__(output))
    return None


def judge_record(record: Any, output: Any, intact: bool, weak: bool = False,
                 strict: bool = True) -> tuple[str, str] | None:
    """(flag, message) for the first runtime rule the forward broke, or None. ``weak`` (timed calls, in memory
    that is not poisoned: a kernel that writes what was already there changes no byte): the outputs may not hold
    torch-made or foreign bytes, but need not show a kernel's (``provenance_problem``). ``strict=False``
    (permissive mode) lets torch compute in the forward; nothing else changes."""
    if not intact:
        return "tampering", "the verifier's hooks were replaced during the forward pass"
    values = output_values(output)
    if values is None:
        return ("not_plain_tensor", f"forward returned a {type_name(output)}: return a tensor, or a plain "
                                    "tuple or list of tensors")
    if record.unseen is not None:  # tensors' own attributes, torch rebound: ``Monitor.run_forward`` (before delivery)
        return "tampering", record.unseen
    if record.unowned is not None:
        return "threads", record.unowned
    if record.launches < 1:
        return "no_triton_launch", "the forward pass launched no Triton kernel"
    return conduct_problem(record, strict) or outputs_problem(record, values, weak)


WHERE = {"forward": "in the forward pass", "drop": "while the candidate's objects were dropped (__del__, finalizers)",
         "explain": "while the candidate's exception was read (__str__, __repr__)"}


def conduct_problem(record: Any, strict: bool = True, intact: bool = True) -> tuple[str, str] | None:
    """(flag, message) for what a watched moment did that no moment may, whatever came of it: a forward that
    raised (a claimed failure is judged like any other forward), the harness dropping or explaining the
    candidate's objects. Torch compute is refused in every mode outside a forward (nothing honest computes while
    it is destroyed or its error is read); values leaving torch, in every mode."""
    if not intact:
        return "tampering", "the verifier's hooks were replaced"
    if record.unseen is not None:
        return "tampering", record.unseen
    if record.unowned is not None:
        return "threads", record.unowned
    where = WHERE.get(record.phase, f"in the {record.phase}")
    if getattr(record, "stopped", None):
        return "runtime_error", record.stopped
    if record.escapes:
        return "torch_compute", f"{'; '.join(record.escapes[:MAX_OPS_REPORTED])}: the work must be done in Triton kernels"
    if record.torch_ops and (strict or record.phase != "forward"):
        ops = ", ".join(record.torch_ops[:MAX_OPS_REPORTED])
        return "torch_compute", f"torch compute {where} ({ops}): the work must be done in Triton kernels"
    return None


def outputs_problem(record: Any, values: list, weak: bool) -> tuple[str, str] | None:
    for i, value in enumerate(values):
        if type(value) is not _Tensor:
            continue  # judged by the comparison (not_plain_tensor)
        dev, lo, hi = storage_range(value)
        if any(d == dev and lo < end and start < hi for d, start, end in record.protected):
            return ("output_aliases_input",
                    f"output {i} shares memory with an input or parameter: it must be computed by a kernel")
        problem = (provenance_problem(i, record.provenance.classes(value), weak)
                   or layout_problem(i, value, record.sources))
        if problem:
            return "output_not_written", problem
    return None

