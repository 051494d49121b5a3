"""What a candidate's forward pass really did, watched from inside its child before the candidate is imported.

Static checks read the code; this watches it run, so what the code's spelling hides (a torch op reached through
a container, an alias, ``operator``, a hook, a heuristic) is still seen. Installed by the harness before candidate
import and checked to be still in place after each forward:

- **Triton launches**: ``JITFunction.run`` / ``InterpretedFunction.run`` are wrapped at the class level. Each
  launch is counted, and the bytes of every storage it was handed (inputs and parameters excepted) are compared
  before and after it: the elements that changed were *written by that kernel*.
- **torch ops**: a ``TorchDispatchMode`` sees every aten op the forward runs. Allocation, views, metadata, copies
  and fills are allowed; any other op is torch compute (``torch_compute``). Triton's own launch path (autotuning,
  the interpreter's copies) is exempt while no candidate code is on the stack, unless the op computes on this
  forward's data: a ``pre_hook``, a heuristic or a pre-run hook that computes with torch (a builtin such as
  ``torch.clamp`` or an ``nn.Module`` given as the hook included) is seen as what it is.
- **values into Python**: ``.item()``, ``float(t)``, ``bool(t)`` of data no kernel computed (inputs, echoes of
  them, torch-made data) is torch compute, and so is ``.tolist()``/``.numpy()`` of any of this forward's data; up
  to ``MAX_SCALAR_READS`` single values of kernel results may be read (a max or a norm handed on as a scalar).

**Provenance, element by element.** Every byte of every storage the forward touches has a class: ``INPUT``,
``PARAM``, ``CONST`` (a fill or a tensor from Python constants), ``KERNEL`` (written by a Triton launch),
``ECHO`` (written by a launch with the same bits as an input or parameter argument at the same place),
``COPIED`` (a torch copy of input, parameter or echoed data in another layout or dtype: torch did that work),
``TORCH`` (a torch result), ``UNSET`` (allocated in this forward, never written: poisoned with NaN) or ``STALE``
(memory this forward did not make: an attribute filled in ``__init__``, at import or in an earlier call). A
launch credits whole elements (a value may share bytes with the poison). Copies carry their source's classes; a
kernel whose written values repeat, at the same flat positions and within the tolerance of the float type the
bytes are read as, an argument's ``STALE``, ``UNSET``, ``COPIED`` or ``TORCH`` data is a copy kernel, and what it
wrote keeps that class. At the end every output must hold some ``KERNEL`` or ``ECHO`` bytes and none that is
``STALE``, ``COPIED``, ``TORCH`` or ``UNSET`` (``output_not_written``), must not share memory with an input or
parameter (``output_aliases_input``), must not be a transposed or broadcast view, and must be a plain tensor,
returned alone or in a plain tuple or list (``not_plain_tensor``).

**Shadows: nothing written unseen.** After every op and launch that writes a storage, the watch keeps a copy of
the storage's bytes as it saw them. Before each launch and at the end of the forward the bytes must still be
those: anything else was written where the watch cannot see (a thread, whose dispatch modes are its own; numpy
through ``__dlpack__``; code that silenced the monitor): ``tampering``.

**Timed calls** run under the same watch (``run_forward(coarse=True)``): torch compute, launches and torch-made
bytes in the outputs, with one set of classes per storage kept on the host, no shadows and no snapshots around
launches (a launch may have written all it was handed, except torch-made data it cannot be seen to overwrite).
A secret share of extra calls is watched element by element (the judge's ``WATCH_RATE``).

Limits (docs/verifier.md): this runs in the candidate's own process. The audit hook
(``tritonrl.verify.child.audit``) and the static checks keep candidate code from reaching it, and what a
silenced monitor would miss is in the shadows; the judge checks the outputs itself. A kernel that copies
torch-made data in another arrangement than it was given (a permutation of it), or copies inputs into another
dtype (so that a torch cast back looks like a kernel's result), is not recognised as a copy.
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
    COPIED,
    ECHO,
    FROM_INPUTS,
    INPUT,
    KERNEL,
    PARAM,
    TORCH,
    UNSET,
    CoarseProvenance,
    Provenance,
    copy_ends,
    credit_launch,
    layout_problem,
    provenance_problem,
    storage_key,
)
from tritonrl.verify.wire import CODE_PATH

ALLOC_OPS = frozenset({  # allocate, write no values (an empty buffer is poisoned, never "written")
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
})
REBIND_OPS = frozenset({"set_", "resize_"})  # point a tensor at a storage: new memory is UNSET, existing keeps its
FILL_OPS = frozenset({  # write values that are not a kernel's: constants, ranges, tensors from Python values
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "arange", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "fill_", "zero_",
})
CARRIES_DATA = frozenset({INPUT, PARAM, KERNEL, COPIED, TORCH, ECHO})  # a storage holding this forward's data
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "contiguous"})
META_OPS = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size",
                      "stride", "dim", "is_same_size", "_has_compatible_shallow_copy_type", "record_stream"})
READ_OPS = frozenset({"_local_scalar_dense"})  # a value leaves the tensor for Python (.item(), float(), bool())
UNCOMPUTED = frozenset({INPUT, ECHO, COPIED, TORCH})  # data no kernel computed: never read into Python
MAX_SCALAR_READS = 8  # values of kernel results one forward may read into Python (not enough to compute there)
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
    scalar_reads: int = 0
    unseen: str | None = None  # bytes that changed where the watch could not see (``Monitor.check_shadows``)
    shadows: dict = field(default_factory=dict)
    torch_ops: list[str] = field(default_factory=list)
    protected: list[tuple[str, int, int]] = field(default_factory=list)
    provenance: Provenance | CoarseProvenance = field(default_factory=Provenance)
    coarse: bool = False

    def compute(self, name: str) -> None:
        if name not in self.torch_ops:
            self.torch_ops.append(name)


# Where the monitor lives, and why there: candidate code shares this process, and CPython audits few attribute
# reads. A closure (``__closure__``, ``cell_contents``), a module global (``__globals__``), an instance attribute
# (``__dict__``) or a bound method (``__self__``) can be read without any audit event, so the hooks installed on
# Triton's and torch's classes hold the monitor only as a *keyword-only default* (``__kwdefaults__``, whose read is
# an audited event the audit hook refuses to candidate code), and the dispatch mode's class is made per monitor
# the same way (the current mode is reachable through torch; its instance holds nothing).
def _watch_mode(monitor: Monitor) -> type:
    def __torch_dispatch__(self, func, types, args=(), kwargs=None, *, _tritonrl_monitor=monitor):
        out = func(*args, **(kwargs or {}))
        monitor = _tritonrl_monitor
        if monitor.record is not None and not monitor.internal:
            monitor.internal += 1
            try:
                if not monitor.in_launch or monitor.candidate_in_launch():
                    monitor.account(func, args, out)
                else:
                    monitor.account_in_launch(func, args, out)
            finally:
                monitor.internal -= 1
        return out

    return without_dynamo_import(type("_Watch", (TorchDispatchMode,), {"__torch_dispatch__": __torch_dispatch__}))


def without_dynamo_import(mode_class: type) -> type:
    """``mode_class`` (a ``TorchDispatchMode``) whose dispatch never imports ``torch._dynamo``.

    torch wraps a mode's ``__torch_dispatch__`` in ``torch._disable_dynamo``, whose first call imports
    ``torch._dynamo`` (and sympy: 1.2 s on a 2-core CPU, 4.5 s on the GPU machine) only to keep dynamo from
    tracing into the function, and caches the result on the function as ``__dynamo_disable``. Nothing here runs
    under ``torch.compile`` (candidates may not use it), so that cache is filled with the function itself: each
    child skips the import, and the zygote no longer has to make it for them. A torch without the wrapper or the
    cache is left as it is (the import then happens, as before)."""
    raw = getattr(mode_class.__dict__.get("__torch_dispatch__"), "__wrapped__", None)
    if callable(raw) and getattr(raw, "__dynamo_disable", None) is None:
        setattr(raw, "__dynamo_disable", raw)
    return mode_class


def _launch_wrapper(original: Callable, monitor: Monitor) -> Callable:
    def run(self, *args, _tritonrl_watch=(original, monitor), **kwargs):
        original, monitor = _tritonrl_watch
        if kwargs.get("warmup", False) or monitor.record is None:
            return original(self, *args, **kwargs)
        return monitor.launch(original, self, args, kwargs)
    return run


def _quiet_wrapper(original: Callable, monitor: Monitor) -> Callable:
    def run(self, *args, _tritonrl_watch=(original, monitor), **kwargs):
        original, monitor = _tritonrl_watch
        monitor.in_launch += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            monitor.in_launch -= 1
    return run


def _reader(original: Callable, monitor: Monitor) -> Callable:
    def read(self, *args, _tritonrl_watch=(original, monitor), **kwargs):
        original, monitor = _tritonrl_watch
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
        self._mode: type | None = None

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
        made = [(cls, "run", _launch_wrapper(cls.run, self)) for cls in launchers]
        made += [(cls, "run", _quiet_wrapper(cls.run, self)) for cls in quiet]
        made += [(_Tensor, name, _reader(getattr(_Tensor, name), self)) for name in ("tolist", "numpy", "__array__")]
        self._launch_codes.update(fn.__code__ for _, name, fn in made if name == "run")
        self._mode = _watch_mode(self)
        return made

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
            if record.coarse:  # no snapshots: whatever the launch was handed, it may have written
                result = original(kernel, *args, **kwargs)
                record.launches += 1
                self.total_launches += 1
                for t in watched:
                    record.provenance.launched(t)
                return result
            self.internal += 1
            try:
                self.check_shadows(watched)
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
                    for t in watched:
                        self._shadow(t)
                finally:
                    self.internal -= 1
            return result
        finally:
            self.in_launch -= 1

    def account(self, func: Any, args: tuple, out: Any) -> None:
        written = self._classify(func, args, out)
        if written and not self.record.coarse:
            for t in written:
                self._shadow(t)

    def _classify(self, func: Any, args: tuple, out: Any) -> list[torch.Tensor]:
        """Set the classes of what the op wrote (or flag it); the tensors it wrote."""
        name = _op_name(func)
        record = self.record
        prov = record.provenance
        if name in META_OPS or _is_view(func):
            return []
        outs, inputs = _tensors(out), _tensors(args)
        if name in READ_OPS and inputs:
            classes = prov.classes(inputs[0])
            if classes & UNCOMPUTED:
                record.compute("item (input values read into Python)")
            elif KERNEL in classes:
                record.scalar_reads += 1  # a kernel's result handed on as a scalar (a norm, a max): a few are fine
                if record.scalar_reads > MAX_SCALAR_READS:
                    record.compute(f"item (more than {MAX_SCALAR_READS} values of kernel results read into "
                                   "Python)")
            return []
        if name in ALLOC_OPS:
            for t in outs:
                prov.mark(t, UNSET)
            return outs
        if name in REBIND_OPS:  # set_ over an existing storage (``t.storage()[i]`` does that) changes no byte
            for t in outs[:1]:
                if not prov.seen(t):
                    prov.mark(t, UNSET)
            return outs[:1]
        if name in COPY_OPS:
            dst, src = copy_ends(name, inputs, outs)
            if dst is not None and src is not None:
                prov.copy(dst, src)
            return [dst] if dst is not None else []
        if name in FILL_OPS:
            written = outs + (inputs[:1] if name.endswith("_") else [])
            for t in written:
                prov.mark(t, CONST)
            return written
        record.compute(name)
        written = outs + (inputs[:1] if func._schema.is_mutable else [])
        for t in written:
            prov.mark(t, TORCH)
        return written

    def _shadow(self, t: torch.Tensor) -> None:
        """Keep a copy of the bytes of ``t``'s storage as the watch last saw them written."""
        if self._protected(t):
            return
        flat = _storage_bytes(t)
        self.record.shadows[storage_key(t)] = (flat, _clone(flat))

    def check_shadows(self, tensors: list[torch.Tensor] | None = None) -> None:
        """Memory the watch saw written must hold what it saw (of ``tensors``' storages, or all): bytes that
        changed since came from code it cannot see (a thread, numpy, a silenced monitor)."""
        record = self.record
        if record.unseen is not None or not record.shadows:
            return
        keys = record.shadows.keys() if tensors is None else [storage_key(t) for t in tensors]
        for key in list(keys):
            entry = record.shadows.get(key)
            if entry is None:
                continue
            flat, seen = entry
            if flat.numel() != seen.numel() or not _equal(flat, seen):
                record.unseen = (f"memory the forward pass wrote changed where the verifier could not see it "
                                 f"(not a Triton launch or a torch op: a thread, numpy, code that silenced the "
                                 f"watch); {int((flat != seen).sum()) if flat.numel() == seen.numel() else 'all'}"
                                 " bytes")
                return

    def account_in_launch(self, func: Any, args: tuple, out: Any) -> None:
        """An op run inside Triton's launch path with no candidate frame on the stack: Triton's own (autotuning,
        the interpreter's copies) unless it computes on this forward's data (a builtin or an ``nn.Module`` given as
        a hook runs there without a frame of the candidate's). Allocations, fills and copies there compute
        nothing, but what they write is accounted all the same (``reset_to_zero`` zeroes an output between an
        autotuner's benchmark runs, ``restore_value`` copies one back): unaccounted, those bytes would look written
        behind the watch's back at the next launch."""
        name = _op_name(func)
        if name in META_OPS or name in READ_OPS or _is_view(func):
            return
        if name in ALLOC_OPS or name in REBIND_OPS or name in FILL_OPS or name in COPY_OPS:
            self.account(func, args, out)
            return
        prov = self.record.provenance
        if any(prov.classes(t) & CARRIES_DATA for t in _tensors(args)):
            self.account(func, args, out)

    def _protected(self, t: torch.Tensor) -> bool:
        lo_dev, lo, hi = storage_range(t)
        return any(dev == lo_dev and lo < end and start < hi for dev, start, end in self.record.protected)

    def run_forward(self, model: torch.nn.Module, inputs: list, coarse: bool = False) -> tuple[Any, ForwardRecord]:
        """``model(*inputs)`` under watch; the record says what ran and who wrote which bytes. ``coarse`` (timed
        calls not watched byte by byte): the same watch of torch ops and launches, with one set of classes per
        storage, no device work and no snapshots around launches (a launch may have written all it was handed)."""
        params = [*model.parameters(), *model.buffers()]
        record = ForwardRecord(protected=[storage_range(t) for t in _tensors(inputs) + params], coarse=coarse,
                               provenance=CoarseProvenance() if coarse else Provenance())
        for t in _tensors(inputs):
            record.provenance.mark(t, INPUT)
        for t in params:
            record.provenance.mark(t, PARAM)
        self.record = record
        try:
            with torch.no_grad(), self._mode():
                output = model(*inputs)
            if not coarse:
                self.internal += 1
                try:
                    if _cuda_sync is not None and any(t.device.type == "cuda" for t in _tensors(inputs)):
                        _cuda_sync()
                    self.check_shadows()
                finally:
                    self.internal -= 1
        finally:
            self.record = None
            record.shadows = {}
        return output, record


def output_values(output: Any) -> list | None:
    """The outputs as a list, if ``output`` is a plain tensor or a plain tuple/list (exact types: a subclass
    could compute when unpacked); None otherwise. Never calls anything of the candidate's."""
    if type(output) is _Tensor:
        return [output]
    if type(output) in (tuple, list):
        return list(tuple.__iter__(output)) if type(output) is tuple else list(list.__iter__(output))
    return None


def judge_record(record: ForwardRecord, output: Any, intact: bool, weak: bool = False) -> tuple[str, str] | None:
    """(flag, message) for the first runtime rule the forward broke, or None. ``weak`` (timed calls, in memory
    that is not poisoned: a kernel that writes what was already there changes no byte): the outputs may not hold
    torch-made bytes, but need not show a kernel's (``provenance_problem``)."""
    if not intact:
        return "tampering", "the verifier's launch hooks were replaced during the forward pass"
    values = output_values(output)
    if values is None:
        return ("not_plain_tensor", f"forward returned a {type(output).__qualname__}: return a tensor, or a plain "
                                    "tuple or list of tensors")
    if record.unseen is not None:
        return "tampering", record.unseen
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
        problem = provenance_problem(i, record.provenance.classes(value), weak) or layout_problem(i, value)
        if problem:
            return "output_not_written", problem
    return None


