"""What a candidate's forward pass really did, watched from inside its child before the candidate is imported.

Static checks read the code; this watches it run, so what the code's spelling hides (a torch op reached through
a container, an alias, ``operator``, a hook, a heuristic) is still seen. Installed by the harness before candidate
import and checked to be still in place after each forward:

- **Triton launches**: ``JITFunction.run`` / ``InterpretedFunction.run`` are wrapped at the class level. Each
  launch is counted, and the bytes of every storage it was handed (inputs and parameters excepted) are compared
  before and after it: the bytes that changed were *written by that kernel*.
- **torch ops**: a ``TorchDispatchMode`` sees every aten op the forward runs. Allocation, views, metadata, copies
  and fills are allowed; any other op is torch compute (``torch_compute``). Triton's own launch path (autotuning,
  the interpreter's copies) is exempt, but only while no candidate code is on the stack: a ``pre_hook``, a
  heuristic, an autotune callable or a pre-run hook that computes with torch is seen as what it is.
- **values into Python**: ``.item()``, ``float(t)``, ``bool(t)``, ``.tolist()``, ``.numpy()`` of data that came
  from the inputs (not of parameters or constants) is torch compute too: arithmetic in Python on the answer's
  values is not a kernel's.

**Provenance, byte by byte.** Every byte of every storage the forward touches has a class: ``INPUT``, ``PARAM``,
``CONST`` (a fill or a tensor from Python constants), ``KERNEL`` (changed by a Triton launch), ``COPIED`` (a torch
copy of input or parameter data in another layout or dtype: torch did the layout work), ``TORCH`` (a torch
result), ``UNSET`` (allocated in this forward, never written: poisoned with NaN, which the comparison catches) or
``STALE`` (memory this forward did not make: an attribute filled in ``__init__``, at import or in an earlier
call, where anything may have been computed). Copies carry their source's classes; a kernel whose written values
equal, at the same positions and within the tolerance, a ``STALE``, ``COPIED`` or ``TORCH`` argument of its launch
is a copy kernel, and what it wrote keeps that class. At the end, every output must hold at least one ``KERNEL``
byte and none that is ``STALE``, ``COPIED`` or ``TORCH`` (``output_not_written``), must not share memory with an
input or parameter (``output_aliases_input``), and must be a plain tensor, returned alone or in a plain tuple or
list (anything else could compute when the harness unpacks it: ``not_plain_tensor``).

Limits (docs/verifier.md): this runs in the candidate's own process; the static checks and the audit hook
(``tritonrl.verify.child.audit``) keep candidate code from reaching it, and the judge checks the outputs itself.
A kernel that copies torch-made data in another arrangement than it was given (a permutation of it) is not
recognised as a copy; an output that is an identity copy of an input with one kernel-written byte passes this
check and is then judged by its values alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from tritonrl.verify.child.provenance import (
    CONST,
    FROM_INPUTS,
    INPUT,
    PARAM,
    TORCH,
    UNSET,
    Provenance,
    copy_ends,
    credit_launch,
    layout_problem,
    provenance_problem,
    storage_key,
)
from tritonrl.verify.wire import CODE_PATH

ALLOC_OPS = frozenset({  # allocate, write no values (an empty buffer is poisoned, never "written")
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_", "lift_fresh",
})
FILL_OPS = frozenset({  # write values that are not a kernel's: constants, ranges, tensors from Python values
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "arange", "scalar_tensor", "lift_fresh_copy", "fill_", "zero_",
})
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "contiguous"})
META_OPS = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size",
                      "stride", "dim", "is_same_size", "_has_compatible_shallow_copy_type", "record_stream"})
READ_OPS = frozenset({"_local_scalar_dense"})  # a value leaves the tensor for Python (.item(), float(), bool())
# Bound when this module is imported, before any candidate code: patching torch afterwards changes nothing here.
_equal = torch.equal
_empty = torch.empty
_set = torch.Tensor.set_
_clone = torch.Tensor.clone
_untyped_storage = torch.Tensor.untyped_storage
_storage_ptr = torch.UntypedStorage.data_ptr
_storage_nbytes = torch.UntypedStorage.nbytes
_cuda_sync = getattr(torch._C, "_cuda_synchronize", None)
_Tensor = torch.Tensor
_uint8 = torch.uint8
_getframe = sys._getframe
try:
    from triton.tools.tensor_descriptor import TensorDescriptor as _Descriptors
except ImportError:  # an older Triton: no host-side tensor descriptors
    _Descriptors = None

MAX_OPS_REPORTED = 5


def _op_name(func: Any) -> str:
    return func._schema.name.split("::", 1)[-1]


def _is_view(func: Any) -> bool:
    """An op whose result aliases its input and writes nothing (view, t, select, expand, as_strided, ...)."""
    schema = func._schema
    return (not schema.is_mutable and bool(schema.returns)
            and all(r.alias_info is not None for r in schema.returns))


def _tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if isinstance(t, _Tensor)]


def _launch_tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors a launch can write: its tensor arguments and the tensors under its tensor descriptors."""
    found = []
    for value in tree_flatten(tree)[0]:
        if isinstance(value, _Tensor):
            found.append(value)
        elif _Descriptors and isinstance(value, _Descriptors) and isinstance(getattr(value, "base", None), _Tensor):
            found.append(value.base)
    return found


def storage_range(t: torch.Tensor) -> tuple[str, int, int]:
    storage = _untyped_storage(t)
    start = _storage_ptr(storage)
    return (t.device.type, start, start + _storage_nbytes(storage))


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``t`` as a flat uint8 tensor (a view, no copy)."""
    return _set(_empty(0, dtype=_uint8, device=t.device), _untyped_storage(t))


@dataclass
class ForwardRecord:
    """What one forward pass did."""

    launches: int = 0
    torch_ops: list[str] = field(default_factory=list)
    protected: list[tuple[str, int, int]] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)

    def compute(self, name: str) -> None:
        if name not in self.torch_ops:
            self.torch_ops.append(name)


class _Watch(TorchDispatchMode):
    def __init__(self, monitor: Monitor) -> None:
        super().__init__()
        self.monitor = monitor

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        monitor = self.monitor
        if monitor.record is not None and not monitor.internal and (
                not monitor.in_launch or monitor.candidate_in_launch()):
            monitor.internal += 1
            try:
                monitor.account(func, args, out)
            finally:
                monitor.internal -= 1
        return out


class Monitor:
    """Launch hook plus torch-op watch plus byte provenance; one per child, installed before candidate import."""

    def __init__(self, candidate_file: str = CODE_PATH) -> None:
        self.candidate_file = candidate_file
        self.record: ForwardRecord | None = None
        self.in_launch = 0
        self.internal = 0  # > 0 while the monitor's own torch ops run (never accounted)
        self.total_launches = 0
        self._wrappers: list[tuple[type, str, Callable]] = []
        self._launch_codes: set = set()

    # ------------------------------------------------------------ installation
    def install(self) -> None:
        for cls, name, wrapper in self._make_wrappers():
            setattr(cls, name, wrapper)
            self._wrappers.append((cls, name, wrapper))

    def intact(self) -> bool:
        """The hooks are still the ones installed (a candidate that replaced them is tampering)."""
        return all(cls.__dict__.get(name) is wrapper for cls, name, wrapper in self._wrappers)

    def _make_wrappers(self) -> list[tuple[type, str, Callable]]:
        from triton.runtime.jit import JITFunction

        launchers: list[type] = [JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            launchers.append(InterpretedFunction)
        except ImportError:
            pass
        quiet: list[type] = []  # autotuning and heuristics benchmark and restore with torch ops of their own
        try:
            from triton.runtime.autotuner import Autotuner, Heuristics
            quiet += [Autotuner, Heuristics]
        except ImportError:
            pass
        made = [(cls, "run", self._launch_wrapper(cls.run)) for cls in launchers]
        made += [(cls, "run", self._quiet_wrapper(cls.run)) for cls in quiet]
        made += [(_Tensor, name, self._reader(getattr(_Tensor, name))) for name in ("tolist", "numpy", "__array__")]
        return made

    def _launch_wrapper(self, original: Callable) -> Callable:
        monitor = self

        def run(self, *args, **kwargs):
            if kwargs.get("warmup", False) or monitor.record is None:
                return original(self, *args, **kwargs)
            return monitor.launch(original, self, args, kwargs)
        self._launch_codes.add(run.__code__)
        return run

    def _quiet_wrapper(self, original: Callable) -> Callable:
        monitor = self

        def run(self, *args, **kwargs):
            monitor.in_launch += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                monitor.in_launch -= 1
        self._launch_codes.add(run.__code__)
        return run

    def _reader(self, original: Callable) -> Callable:
        monitor = self

        def read(self, *args, **kwargs):
            record = monitor.record
            if record is not None and not monitor.internal and type(self) is _Tensor:
                monitor.internal += 1
                try:
                    if monitor.carries_inputs(self):
                        record.compute(f"{original.__name__} (tensor values read into Python)")
                finally:
                    monitor.internal -= 1
            return original(self, *args, **kwargs)
        read.__name__ = original.__name__
        return read

    # ------------------------------------------------------------ during a forward
    def candidate_in_launch(self) -> bool:
        """Inside Triton's launch path, whether candidate code (a hook, a heuristic) is what is running now."""
        frame = _getframe(2)
        while frame is not None and frame.f_code not in self._launch_codes:
            if frame.f_code.co_filename == self.candidate_file:
                return True
            frame = frame.f_back
        return False

    def carries_inputs(self, t: torch.Tensor) -> bool:
        record = self.record
        if record is None or not t.numel():
            return False
        return bool(record.provenance.classes(t) & set(FROM_INPUTS))

    def launch(self, original: Callable, kernel: Any, args: tuple, kwargs: dict) -> Any:
        record = self.record
        self.in_launch += 1
        try:
            given = _launch_tensors((args, kwargs))
            watched = [t for t in given if not self._protected(t)]
            self.internal += 1
            try:
                before = {storage_key(t): _clone(_storage_bytes(t)) for t in watched}
            finally:
                self.internal -= 1
            result = original(kernel, *args, **kwargs)
            record.launches += 1
            self.total_launches += 1
            if before:
                if watched[0].device.type == "cuda" and _cuda_sync is not None:
                    _cuda_sync()
                self.internal += 1
                try:
                    credit_launch(record.provenance, watched, given, before, _storage_bytes)
                finally:
                    self.internal -= 1
            return result
        finally:
            self.in_launch -= 1

    def account(self, func: Any, args: tuple, out: Any) -> None:
        name = _op_name(func)
        record = self.record
        prov = record.provenance
        if name in META_OPS or _is_view(func):
            return
        outs, inputs = _tensors(out), _tensors(args)
        if name in READ_OPS:
            if inputs and self.carries_inputs(inputs[0]):
                record.compute("item (tensor values read into Python)")
            return
        if name in ALLOC_OPS:
            for t in outs:
                prov.mark(t, UNSET)
            return
        if name in COPY_OPS:
            dst, src = copy_ends(name, inputs, outs)
            if dst is not None and src is not None:
                prov.copy(dst, src)
            return
        if name in FILL_OPS:
            for t in outs + (inputs[:1] if name.endswith("_") else []):
                prov.mark(t, CONST)
            return
        record.compute(name)
        for t in outs + (inputs[:1] if func._schema.is_mutable else []):
            prov.mark(t, TORCH)

    def _protected(self, t: torch.Tensor) -> bool:
        lo_dev, lo, hi = storage_range(t)
        return any(dev == lo_dev and lo < end and start < hi for dev, start, end in self.record.protected)

    def run_forward(self, model: torch.nn.Module, inputs: list) -> tuple[Any, ForwardRecord]:
        """``model(*inputs)`` under watch; the record says what ran and who wrote which bytes."""
        params = [*model.parameters(), *model.buffers()]
        record = ForwardRecord(protected=[storage_range(t) for t in _tensors(inputs) + params])
        for t in _tensors(inputs):
            record.provenance.mark(t, INPUT)
        for t in params:
            record.provenance.mark(t, PARAM)
        self.record = record
        try:
            with torch.no_grad(), _Watch(self):
                output = model(*inputs)
        finally:
            self.record = None
        return output, record


def output_values(output: Any) -> list | None:
    """The outputs as a list, if ``output`` is a plain tensor or a plain tuple/list (exact types: a subclass
    could compute when unpacked); None otherwise. Never calls anything of the candidate's."""
    if type(output) is _Tensor:
        return [output]
    if type(output) in (tuple, list):
        return list(tuple.__iter__(output)) if type(output) is tuple else list(list.__iter__(output))
    return None


def judge_record(record: ForwardRecord, output: Any, intact: bool, provenance: bool = True) -> tuple[str, str] | None:
    """(flag, message) for the first runtime rule the forward broke, or None. ``provenance=False``: without the
    byte provenance of the outputs (unpoisoned memory, as in timed calls: a kernel that writes what was already
    there changes no byte), the rest as always."""
    if not intact:
        return "tampering", "the verifier's launch hooks were replaced during the forward pass"
    values = output_values(output)
    if values is None:
        return ("not_plain_tensor", f"forward returned a {type(output).__qualname__}: return a tensor, or a plain "
                                    "tuple or list of tensors")
    if record.launches < 1:
        return "no_triton_launch", "the forward pass launched no Triton kernel"
    if record.torch_ops:
        ops = ", ".join(record.torch_ops[:MAX_OPS_REPORTED])
        return "torch_compute", f"the forward pass ran torch compute ({ops}): the work must be done in Triton kernels"
    for i, value in enumerate(values):
        if type(value) is not _Tensor:
            continue  # judged by the comparison (not_plain_tensor)
        dev, lo, hi = storage_range(value)
        if any(d == dev and lo < end and start < hi for d, start, end in record.protected):
            return ("output_aliases_input",
                    f"output {i} shares memory with an input or parameter: it must be computed by a kernel")
        problem = (provenance_problem(i, record.provenance.classes(value)) if provenance else None) \
            or layout_problem(i, value)
        if problem:
            return "output_not_written", problem
    return None


