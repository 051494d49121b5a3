"""The monitor's hooks on Triton's and torch's classes, made before the candidate is imported (candidate child).

Where the monitor lives, and why there: candidate code shares this process, and CPython audits few attribute
reads. A closure (``__closure__``, ``cell_contents``), a module global (``__globals__``), an instance attribute
(``__dict__``) or a bound method (``__self__``) can be read without any audit event, so each hook holds the
monitor only as a *keyword-only default* (``__kwdefaults__``, whose read is an audited event the audit hook
refuses to candidate code), and the dispatch mode's class is made per monitor the same way (the current mode is
reachable through torch; its instance holds nothing).

- ``launch_wrapper``: ``JITFunction.run`` (a GPU's launch) and ``GridExecutor.__call__`` (the CPU interpreter's, its
  lowest launch point, whoever built the executor): every launch goes through the monitor;
- ``quiet_wrapper``: the autotuner's and heuristics' ``run``: their own torch ops are Triton's, not the candidate's;
- ``constexpr_wrapper``: ``ConstexprFunction.__call__``: the numbers a constexpr function hands a kernel are counted;
- ``export_wrapper``: every way a tensor's values leave torch for Python or numpy (``tolist``; the live views
  ``numpy``, ``__array__``, ``__dlpack__``, ``__cuda_array_interface__``, ``torch.utils.dlpack.to_dlpack``; and
  ``apply_``, ``map_``, ``map2_``, which hand every value to a Python function and write its result back);
- ``storage_hooks``: a storage's raw byte channels (``_write_file``, ``_set_from_file`` ...), refused;
- ``watch_mode``: the ``TorchDispatchMode`` that sees every aten op.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tritonrl.verify.child import probe
from tritonrl.verify.child.aten_ops import tensors

_getframe = sys._getframe  # bound before the candidate is imported

_Tensor = torch.Tensor
_RESIZES = (torch.ops.aten.resize_.default, torch.ops.aten.resize_as_.default)
COPYING_EXPORTS = ("tolist",)                              # the values, copied into Python objects
LIVE_EXPORTS = ("numpy", "__array__", "__dlpack__")         # views of the tensor's memory another library can write
# each value handed to a Python function and its result written back: Python's compute, no aten op to see (issue
# 51's fresh red team computed a ReLU, a softmax and a whole GEMM epilogue this way, written from a grid callable).
# A candidate reaching the base class's method (``super(torch.Tensor, t).apply_``) is refused by the static check.
PYTHON_MAPS = ("apply_", "map_", "map2_")


def watch_mode(monitor: Any) -> type:
    def __torch_dispatch__(self, func, types, args=(), kwargs=None, *, _tritonrl_monitor=monitor):
        monitor = _tritonrl_monitor
        watched = monitor.record is not None and not monitor.internal
        if watched:  # before the watch reads any of them
            monitor.refuse_overrides(tensors(args))
        before = None
        if watched and func in _RESIZES:  # a grown storage is a new one: what the old bytes were goes with them
            monitor.internal += 1
            try:
                before = monitor.resizing(args[0])
            finally:
                monitor.internal -= 1
        try:
            out = func(*args, **(kwargs or {}))
        except BaseException:
            if watched:
                monitor.internal += 1
                try:
                    monitor.raised(func, args)
                finally:
                    monitor.internal -= 1
            raise
        if watched:
            monitor.internal += 1
            try:
                monitor.dispatched(func, args, out)
                if before is not None:
                    monitor.resized(args[0], before)
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


def launch_wrapper(original: Callable, monitor: Any) -> Callable:
    def run(self, *args, _tritonrl_watch=(original, monitor), **kwargs):
        original, monitor = _tritonrl_watch
        if kwargs.get("warmup", False) or monitor.record is None:
            return original(self, *args, **kwargs)
        return monitor.launch(original, self, args, kwargs)
    return run


def executor_wrapper(original: Callable, monitor: Any, interpreted: bool) -> Callable:
    """``GridExecutor.__call__``: under the CPU interpreter, a launch like any other (``launch_wrapper``); on a GPU
    no honest launch runs the interpreter, so none may (its programs are Python the GPU never compiled)."""
    def __call__(self, *args, _tritonrl_watch=(original, monitor, interpreted), **kwargs):  # noqa: N807
        original, monitor, interpreted = _tritonrl_watch
        if not interpreted:
            raise RuntimeError("a launch through Triton's interpreter on a GPU: only compiled kernels run here")
        if probe.active():  # the forward at the GPU's shape on the meta device: checked, not run (``probe.py``)
            return probe.check_launch(self, args, kwargs)
        if monitor.record is None:
            return original(self, *args, **kwargs)
        return monitor.launch(original, self, args, kwargs)
    return __call__


def constexpr_wrapper(original: Callable, monitor: Any) -> Callable:
    """``ConstexprFunction.__call__``: what a constexpr function returns inside a launch is Python's numbers entering
    the kernel (``Monitor.constexpr_values``)."""
    def __call__(self, *args, _tritonrl_watch=(original, monitor), **kwargs):  # noqa: N807 - Triton's name
        original, monitor = _tritonrl_watch
        result = original(self, *args, **kwargs)
        if monitor.in_launch and monitor.record is not None and not monitor.internal:
            monitor.internal += 1
            try:
                monitor.constexpr_values(result)
            finally:
                monitor.internal -= 1
        return result
    return __call__


def pose_as(wrapper: Any, original: Any) -> None:
    """``wrapper`` (a hook replacing ``original``) answers ``inspect.signature`` with ``original``'s, without anyone
    reading its own ``__code__`` or ``__kwdefaults__`` (refused: they hold the monitor). Triton 3.6's front end asks
    ``inspect.signature(fn.__call__)`` of every ``constexpr_function`` it calls (``tl.sum``'s ``_pick_sum_dtype``),
    to pass ``_semantic``: the refused read failed every kernel with a ``tl.sum`` on a GPU and in the CPU's front-end
    check (Triton 3.9 does not ask). A C function or a property without a signature is left as it is."""
    if not callable(wrapper) or isinstance(wrapper, property):
        return
    try:
        wrapper.__signature__ = inspect.signature(original)
    except (TypeError, ValueError, AttributeError):  # a builtin without one, or no original
        pass


def quiet_wrapper(original: Callable, monitor: Any) -> Callable:
    def run(self, *args, _tritonrl_watch=(original, monitor), **kwargs):
        original, monitor = _tritonrl_watch
        monitor.in_launch += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            monitor.in_launch -= 1
    return run


def export_wrapper(original: Callable, monitor: Any, live: bool, name: str) -> Callable:
    """A method (or function) whose first argument is a tensor whose values it hands to Python or numpy."""
    def export(tensor, *args, _tritonrl_watch=(original, monitor, live, name), **kwargs):
        original, monitor, live, name = _tritonrl_watch
        if monitor.record is not None and not monitor.internal and isinstance(tensor, _Tensor):
            monitor.internal += 1
            try:
                monitor.exported(tensor, name, live)
            finally:
                monitor.internal -= 1
        return original(tensor, *args, **kwargs)
    export.__name__ = name
    return export


# A storage's raw byte channels: file I/O into and out of Python objects and pointer swaps, none an aten op (the
# twenty-seventh red team read inputs with ``_write_file`` and wrote an answer computed in Python with
# ``_set_from_file``, unseen). Refused on torch's Python storage classes; their C base is out of the candidate's
# reach (``torch._C`` is refused by the static check, as every private name of a storage is).
STORAGE_CHANNELS = ("_write_file", "_set_from_file", "_new_with_file", "_swap_data_ptr_", "_byteswap",
                    "_resize_with_addr_", "_new_using_fd_cpu", "_new_using_filename_cpu", "_share_fd_cpu_",
                    "_share_filename_cpu_", "_new_shared_fd_cpu", "_new_shared_filename_cpu")


def refusing_wrapper(monitor: Any, name: str) -> staticmethod:
    """A storage method moving raw bytes outside torch's ops: any call in the child is tampering, recorded (so a
    swallowed error still fails the phase) and raised."""
    def refuse(*args, _tritonrl_watch=(monitor, name), **kwargs):
        monitor, name = _tritonrl_watch
        if monitor.record is not None:
            monitor.record.escape(f"a storage's {name} (it moves tensor bytes outside torch's ops, unseen)")
        raise RuntimeError(f"{name} of a torch storage is not allowed here: it moves tensor bytes outside "
                           "torch's ops, where no watch sees them")
    refuse.__name__ = name
    return staticmethod(refuse)


def compiled_launch_hooks(monitor: Any, launch_code: Any) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement): a compiled kernel's launcher (``CompiledKernel.run``, a property) is handed
    only to Triton's own ``JITFunction.run`` (``launch_code``), the launch the monitor watches. A launch returns its
    ``CompiledKernel``, and ``compiled[grid](..., stream=...)`` (or ``compiled.run(...)``) launched it again below
    the watch on a GPU: no count, no stream check, no snapshot (the twenty-ninth red team timed 85% of a ReLU that
    way on a side stream, before the timer's start). Refused and recorded, so a swallowed error still fails the
    phase. Under the CPU interpreter no compiled kernel exists; a Triton whose ``run`` is no property is left as is."""
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError:
        return []
    original = CompiledKernel.__dict__.get("run")
    if not isinstance(original, property) or original.fget is None:
        return []

    def run(self, *, _tritonrl_watch=(original.fget, monitor, launch_code)):
        fget, monitor, code = _tritonrl_watch
        if _getframe(1).f_code is code:
            return fget(self)
        if monitor.record is not None:
            monitor.record.escape("a compiled kernel launched again below the watched launch (CompiledKernel.run "
                                  "or compiled[grid](...))")
        raise RuntimeError("a compiled kernel may run only through its launch (`kernel[grid](...)`): launching the "
                           "CompiledKernel a launch returned is not watched")
    return [(CompiledKernel, "run", property(run))]


def storage_hooks(monitor: Any) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement): each of ``STORAGE_CHANNELS`` on torch's Python storage classes."""
    return [(owner, name, refusing_wrapper(monitor, name))
            for owner in (torch.UntypedStorage, torch.TypedStorage) for name in STORAGE_CHANNELS
            if hasattr(owner, name)]


def export_hooks(monitor: Any) -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for every export: the Tensor methods, the CUDA array interface property,
    and ``to_dlpack`` wherever torch exposes it (one C function under several names)."""
    made: list[tuple[Any, str, Any]] = []
    for name in COPYING_EXPORTS + LIVE_EXPORTS + PYTHON_MAPS:
        live = name not in COPYING_EXPORTS
        made.append((_Tensor, name, export_wrapper(getattr(_Tensor, name), monitor, live, name)))
    interface = _Tensor.__dict__.get("__cuda_array_interface__")
    if isinstance(interface, property) and interface.fget is not None:
        getter = export_wrapper(interface.fget, monitor, True, "__cuda_array_interface__")
        made.append((_Tensor, "__cuda_array_interface__", property(getter)))
    import torch.utils.dlpack as dlpack

    for owner in (dlpack, torch):
        if callable(owner.__dict__.get("to_dlpack")):
            made.append((owner, "to_dlpack", export_wrapper(owner.__dict__["to_dlpack"], monitor, True, "to_dlpack")))
    return made
