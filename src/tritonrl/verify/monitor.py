"""What a candidate's forward pass really did, watched from inside its child before the candidate is imported.

Static checks read the code; this watches it run, so what the code's spelling hides (a torch op reached through
a container, an alias, ``operator``, a hook) is still seen. Two hooks, both installed by the harness before
candidate import and checked to be still in place after each forward:

- **Triton launches**: ``JITFunction.run`` / ``InterpretedFunction.run`` are wrapped at the class level. Each
  launch is counted, and the storages of its tensor arguments that are not inputs or parameters are compared
  byte for byte before and after it: a storage whose bytes changed was *written by a kernel*.
- **torch ops**: a ``TorchDispatchMode`` sees every aten op the forward runs outside Triton's own launch path.
  Allocation, views, metadata, copies/casts and fills are allowed (they move or initialise data); any other op
  is torch compute (``torch_compute``), whatever Python spelling reached it.

After the forward, each output must be a storage last written by a Triton kernel (copies of a kernel's result
keep that provenance; copies of inputs or parameters, fills and torch results do not): ``output_not_written``;
and no output may share memory with an input or parameter: ``output_aliases_input``.

Limits (docs/verifier.md): this runs in the candidate's own process, so code that defeats the static checks
(introspection, ``ctypes``) could unhook it; the damage is confined to that candidate's own verdict, since the
trusted data and the other candidates are out of its reach (``tritonrl.verify.isolation``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

ALLOC_OPS = frozenset({  # allocate or read, write no values (an empty buffer is poisoned, never "written")
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "resize_", "set_", "lift_fresh",
    "_local_scalar_dense",
})
FILL_OPS = frozenset({  # write values that are not a kernel's: constants, ranges
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "arange", "scalar_tensor", "lift_fresh_copy", "fill_", "zero_",
})
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "contiguous"})
META_OPS = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size",
                      "stride", "dim", "is_same_size", "_has_compatible_shallow_copy_type", "record_stream"})
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

TRITON = "triton"   # last writer of a storage: a Triton kernel
TORCH = "torch"     # ... a torch op (a fill, a copy of non-kernel data, compute)
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


def storage_key(t: torch.Tensor) -> tuple[str, int]:
    return (t.device.type, _storage_ptr(_untyped_storage(t)))


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
    writers: dict[tuple[str, int], str] = field(default_factory=dict)
    protected: list[tuple[str, int, int]] = field(default_factory=list)


class _Watch(TorchDispatchMode):
    def __init__(self, monitor: Monitor) -> None:
        super().__init__()
        self.monitor = monitor

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        record = self.monitor.record
        if record is not None and not self.monitor.in_launch:
            self.monitor.account(func, args, out)
        return out


class Monitor:
    """Launch hook plus torch-op watch; one per child, installed before candidate import."""

    def __init__(self) -> None:
        self.record: ForwardRecord | None = None
        self.in_launch = 0
        self.total_launches = 0
        self._wrappers: list[tuple[type, Callable]] = []
        self._watch: _Watch | None = None

    # ------------------------------------------------------------ installation
    def install(self) -> None:
        for cls, wrapper in self._make_wrappers():
            cls.run = wrapper
            self._wrappers.append((cls, wrapper))

    def intact(self) -> bool:
        """The hooks are still the ones installed (a candidate that replaced them is tampering)."""
        return all(cls.__dict__.get("run") is wrapper for cls, wrapper in self._wrappers)

    def _make_wrappers(self) -> list[tuple[type, Callable]]:
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
        made = [(cls, self._launch_wrapper(cls.run)) for cls in launchers]
        made += [(cls, self._quiet_wrapper(cls.run)) for cls in quiet]
        return made

    def _launch_wrapper(self, original: Callable) -> Callable:
        monitor = self

        def run(self, *args, **kwargs):
            if kwargs.get("warmup", False) or monitor.record is None:
                return original(self, *args, **kwargs)
            return monitor.launch(original, self, args, kwargs)
        return run

    def _quiet_wrapper(self, original: Callable) -> Callable:
        monitor = self

        def run(self, *args, **kwargs):
            monitor.in_launch += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                monitor.in_launch -= 1
        return run

    # ------------------------------------------------------------ during a forward
    def launch(self, original: Callable, kernel: Any, args: tuple, kwargs: dict) -> Any:
        record = self.record
        self.in_launch += 1
        try:
            watched = [t for t in _tensors((args, kwargs)) if not self._protected(t)]
            before = {storage_key(t): _clone(_storage_bytes(t)) for t in watched}
            result = original(kernel, *args, **kwargs)
            record.launches += 1
            self.total_launches += 1
            if before:
                if watched[0].device.type == "cuda" and _cuda_sync is not None:
                    _cuda_sync()
                for t in watched:
                    key = storage_key(t)
                    if key in before and not _equal(before.pop(key), _storage_bytes(t)):
                        record.writers[key] = TRITON
            return result
        finally:
            self.in_launch -= 1

    def account(self, func: Any, args: tuple, out: Any) -> None:
        name = _op_name(func)
        record = self.record
        if name in META_OPS or _is_view(func):
            return
        if name in ALLOC_OPS:
            return
        outs, inputs = _tensors(out), _tensors(args)
        if name in COPY_OPS:  # a copy keeps its source's provenance: copy_(dst, src), clone/_to_copy(src)
            source = inputs[1:2] if name == "copy_" else inputs[:1]
            kernel_made = bool(source) and record.writers.get(storage_key(source[0])) == TRITON
            for t in inputs[:1] if name == "copy_" else outs:
                record.writers[storage_key(t)] = TRITON if kernel_made else TORCH
            return
        if name in FILL_OPS:
            for t in outs + (inputs[:1] if name.endswith("_") else []):
                record.writers[storage_key(t)] = TORCH
            return
        if name not in record.torch_ops:
            record.torch_ops.append(name)
        for t in outs + (inputs[:1] if func._schema.is_mutable else []):
            record.writers[storage_key(t)] = TORCH

    def _protected(self, t: torch.Tensor) -> bool:
        lo_dev, lo, hi = storage_range(t)
        return any(dev == lo_dev and lo < end and start < hi for dev, start, end in self.record.protected)

    def run_forward(self, model: torch.nn.Module, inputs: list) -> tuple[Any, ForwardRecord]:
        """``model(*inputs)`` under watch; the record says what ran and who wrote what."""
        record = ForwardRecord(protected=[storage_range(t) for t in _tensors(inputs)]
                               + [storage_range(p) for p in model.parameters()]
                               + [storage_range(b) for b in model.buffers()])
        self.record = record
        try:
            with torch.no_grad(), _Watch(self):
                output = model(*inputs)
        finally:
            self.record = None
        return output, record


def judge_record(record: ForwardRecord, output: Any, intact: bool) -> tuple[str, str] | None:
    """(flag, message) for the first runtime rule the forward broke, or None."""
    if not intact:
        return "tampering", "the verifier's launch hooks were replaced during the forward pass"
    if record.launches < 1:
        return "no_triton_launch", "the forward pass launched no Triton kernel"
    if record.torch_ops:
        ops = ", ".join(record.torch_ops[:MAX_OPS_REPORTED])
        return "torch_compute", f"the forward pass ran torch compute ({ops}): the work must be done in Triton kernels"
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    for i, value in enumerate(outputs):
        if type(value) is not _Tensor:
            continue  # judged by the comparison (not_plain_tensor)
        dev, lo, hi = storage_range(value)
        if any(d == dev and lo < end and start < hi for d, start, end in record.protected):
            return ("output_aliases_input",
                    f"output {i} shares memory with an input or parameter: it must be computed by a kernel")
        if record.writers.get(storage_key(value)) != TRITON:
            return ("output_not_written",
                    f"output {i} was not written by a Triton kernel launched in this forward pass")
    return None
