"""Under the CPU interpreter, every address a kernel touches lies in a tensor handed to its launch.

    owner, name, memory = BoundedMemory.hook()   # the monitor sets it with its other hooks (and checks it stays)
    with memory.launch(tensors): ...        # the monitor's launch: the tensors whose memory this kernel may touch

Triton's interpreter runs a kernel's loads, stores and atomics on raw addresses (``_interpreter.load`` ...), and
a kernel may compute any address from what it is given: ``x_ptr + delta``, with ``delta`` from ``data_ptr()``,
reaches a storage the launch was never handed. The provenance watch credits and taints only what a launch was
handed, so a red team read a torch-made GELU table that way, and in permissive mode copied torch's answer (the
copy search looks only at the launch's arguments). Here each such operation is checked first, on the lanes its
mask lets through: an address outside every handed tensor stops the kernel (``OutsideLaunch``, a runtime error
naming the address) before a byte is read or written. And a memory operation with no watched launch under way is
refused outright: every way into the interpreter's programs (``kernel[grid]``, a bare ``GridExecutor``, a jit
function called from host code, a copy of the executor's loop) ends in these functions, so none runs unwatched.

A tensor's memory is its own extent (from its first element to its last, through its strides), not its whole
storage: the judge's inputs are views of one arena, end to end, so a kernel reading one element past an input (an
unmasked last block, a mask of ``<=``) read its neighbour and, its stray values dropped, passed (issue 51: five
such mutants of the bundled solutions were accepted). A kernel handed a view may still reach any element between
the view's first and last, as its strides can.

And only a kernel's body may touch memory: a memory operation is checked to come from the function the launch's
executor runs for each program (``GridExecutor.fn``, called by Triton's own ``GridExecutor.__call__``), not from
what that call runs around it. The twenty-fifth red team's empty kernels had a grid callable, or a method of a
duck-typed tensor argument (called while the interpreter copies the arguments), drive the interpreter's builder
(``create_load``, ``create_dot``, ``create_store``) or its native ``load``/``store`` on the handed tensors: a whole
GEMM computed by numpy, inside the launch, credited to the kernel. The native module's functions are replaced too
(``triton._C.libtriton.interpreter.load`` imported directly read raw memory outside any launch).

Limits: on a GPU the kernel runs compiled, with no such check: there only a store just past a handed storage is seen
(``guards.py``); launches given tensors off the CPU (the interpreter works on host copies then) are not checked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from tritonrl.verify.shared.flags import OUTSIDE_LAUNCH, UNSET_READ


class OutsideLaunch(RuntimeError):
    """A kernel's memory operation reached outside the tensors handed to its launch."""


class UnsetRead(RuntimeError):
    """A kernel loaded memory nothing wrote: an element of a fresh allocation (``torch.empty``) neither a kernel
    nor a torch op had written (compute-sanitizer's initcheck, on a GPU)."""


def extent(t: torch.Tensor) -> tuple[int, int]:
    """[first byte, one past the last byte) of a non-empty tensor's elements (torch's strides are never negative)."""
    span = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + (span + 1) * t.element_size()


class Stores:
    """The addresses one launch stored to (its stores and atomics, on the lanes their masks let through), and the
    bytes of its storages nothing has written yet (``unset``: storage start -> one flag per byte), which it may
    not load before it stores them."""

    def __init__(self, unset: list[tuple[int, np.ndarray]] | None = None,
                 violated: Callable[[str], None] | None = None) -> None:
        self._ops: list[tuple[np.ndarray, int]] = []
        self._unset = unset or []
        self._violated = violated

    def add(self, addresses: np.ndarray, size: int) -> None:
        self._ops.append((addresses.copy(), size))
        for start, flags in self._unset:
            for offsets in _inside(addresses, size, start, flags.size):
                flags[offsets] = False

    def check_read(self, addresses: np.ndarray, size: int) -> None:
        for start, flags in self._unset:
            for k, offsets in enumerate(_inside(addresses, size, start, flags.size)):
                bad = flags[offsets]
                if bad.any():
                    address = start + int(offsets[bad][0]) - k
                    message = (f"a kernel loaded address {address:#x}, {UNSET_READ} (an element of a "
                               "fresh torch.empty no kernel or torch op wrote yet): what it holds is undefined on a "
                               "GPU, where compute-sanitizer's initcheck reports it; write it first, or mask the load")
                    if self._violated is not None:
                        self._violated(message)
                    raise UnsetRead(message)

    def bytes_of(self, t: torch.Tensor) -> torch.Tensor:
        """One flag per byte of ``t``'s storage: whether the launch stored to it."""
        storage = t.untyped_storage()
        start, nbytes = storage.data_ptr(), storage.nbytes()
        flags = np.zeros(nbytes, dtype=bool)
        for size in {size for _, size in self._ops}:
            for offsets in _inside(np.concatenate([a for a, s in self._ops if s == size]), size, start, nbytes):
                flags[offsets] = True
        return torch.from_numpy(flags)


def _inside(addresses: np.ndarray, size: int, start: int, nbytes: int) -> list[np.ndarray]:
    """The byte offsets, from ``start``, of each of an element's ``size`` bytes, for the elements at ``addresses``
    that lie in ``[start, start + nbytes)``: one array per byte of the element (none when no element does)."""
    offsets = addresses.astype(np.int64) - start
    offsets = offsets[(offsets >= 0) & (offsets + size <= nbytes)]
    return [offsets + k for k in range(size)] if offsets.size else []


class BoundedMemory:
    """Triton's interpreter's memory functions, each address checked against the launch under way."""

    def __init__(self, real: Any, call_code: Any = None) -> None:
        self._real = real
        # the native functions themselves (``hook`` replaces them on their module by this object's checked ones)
        self._native = {name: getattr(real, name) for name in MEMORY_FUNCTIONS if hasattr(real, name)}
        self._call_code = call_code  # Triton's own ``GridExecutor.__call__``: the caller of a kernel's body
        # told of every refusal before it is raised: an error swallowed (``__del__`` hands it to Python's
        # unraisable hook) still fails the phase, so that whether a kernel was stopped tells the candidate nothing
        self.on_violation: Callable[[str], None] | None = None
        self._ranges: list[list[tuple[int, int]] | None] = []  # per launch under way (innermost last)
        self._stores: list[Stores] = []  # and what each stored to

    @classmethod
    def hook(cls) -> tuple[BoundedMemory, list[tuple[Any, str, Any]]] | None:
        """A checking copy of the interpreter's memory module and the (owner, attribute, replacement) hooks that
        put it in place, for the monitor's list (the Python module's reference to the native module, and each
        memory function on the native module itself), or None where this Triton has no interpreter."""
        try:
            import triton.runtime.interpreter as interpreter
        except ImportError:
            return None
        real = interpreter.__dict__.get("_interpreter")
        if real is None:
            return None
        memory = cls(real, _executor_call_code(interpreter))
        # one bound method per function, kept: the monitor's ``intact`` compares the hooks by identity
        return memory, [(interpreter, "_interpreter", memory),
                        *((real, name, getattr(memory, name)) for name in memory._native)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    @contextmanager
    def launch(self, tensors: list[torch.Tensor], unset: list[tuple[int, np.ndarray]] | None = None
               ) -> Iterator[Stores | None]:
        """The launch's memory operations are checked against ``tensors`` until the block ends, its loads against
        ``unset`` (``Stores``); what it yields collects the addresses the launch stored to. A launch handed a
        tensor off the CPU yields None: it runs compiled (or the interpreter works on host copies), so no address
        it stored to is known, and "stored to nothing" would be a claim (the monitor's ``stored`` credit, a CPU
        flag per byte, met a GPU storage's mask: every honest launch on a GPU failed with a device mismatch)."""
        ranges = None
        if all(t.device.type == "cpu" for t in tensors):
            ranges = [extent(t) for t in tensors if t.numel()]
        self._ranges.append(ranges)
        self._stores.append(Stores(unset if ranges is not None else None, self._violated))
        try:
            yield self._stores[-1] if ranges is not None else None
        finally:
            self._ranges.pop()
            self._stores.pop()

    def _violated(self, message: str) -> None:
        if self.on_violation is not None:
            self.on_violation(message)

    def _check(self, ptrs: Any, mask: Any, size: int, what: str, writes: bool = False, reads: bool = True) -> None:
        if not self._ranges:
            message = (f"a kernel's memory operation ({what} an address) outside any watched launch: kernels run "
                       "only through a launch (`kernel[grid](...)`)")
            self._violated(message)
            raise OutsideLaunch(message)
        if self._call_code is not None and not self._in_body(sys._getframe(2)):
            message = (f"a memory operation of Triton's interpreter ({what} an address) outside the kernel's body: "
                       "from a grid function, an argument's method or other host code run by the launch; only the "
                       "kernel's own loads and stores may touch memory")
            self._violated(message)
            raise OutsideLaunch(message)
        ranges = self._ranges[-1]
        if ranges is None:
            return
        p = np.asarray(ptrs, dtype=np.uint64).reshape(-1)
        if mask is not None:
            p = p[np.broadcast_to(np.asarray(mask, dtype=bool), np.shape(ptrs)).reshape(-1)]
        if p.size == 0:
            return
        if reads:
            self._stores[-1].check_read(p, size)
        if writes:
            self._stores[-1].add(p, size)
        inside = np.zeros(p.shape, dtype=bool)
        for lo, hi in ranges:
            inside |= (p >= np.uint64(lo)) & (p + np.uint64(size) <= np.uint64(hi))
        if not inside.all():
            address = int(p[~inside][0])
            message = (f"a kernel {what} address {address:#x}, {OUTSIDE_LAUNCH}: a kernel "
                       "may touch only the elements of its tensor arguments (a mask missing or one element too wide "
                       "reads past the end of a tensor)")
            self._violated(message)
            raise OutsideLaunch(message)

    def _in_body(self, frame: Any) -> bool:
        """Whether ``frame`` (a memory operation's caller) runs inside a kernel's body: the frame that Triton's
        ``GridExecutor.__call__`` called on the way here runs the executor's own function, not the grid callable,
        the argument copies (a duck-typed argument's methods) or a hook."""
        while frame is not None:
            caller = frame.f_back
            if caller is not None and caller.f_code is self._call_code:
                body = getattr(caller.f_locals.get("self"), "fn", None)
                return getattr(body, "__code__", None) is frame.f_code
            frame = caller
        return False

    def load(self, ptrs, mask, other, dtype):
        self._check(ptrs, mask, np.dtype(dtype).itemsize, "loaded from")
        return self._native["load"](ptrs, mask, other, dtype)

    def store(self, ptrs, value, mask):
        self._check(ptrs, mask, np.asarray(value).dtype.itemsize, "stored to", writes=True, reads=False)
        return self._native["store"](ptrs, value, mask)

    def atomic_cas(self, ptrs, cmp, val, sem):
        self._check(ptrs, None, np.asarray(cmp).dtype.itemsize, "updated (atomic_cas)", writes=True)
        return self._native["atomic_cas"](ptrs, cmp, val, sem)

    def atomic_rmw(self, op, ptrs, val, mask, sem):
        self._check(ptrs, mask, np.asarray(val).dtype.itemsize, "updated (atomic)", writes=True)
        return self._native["atomic_rmw"](op, ptrs, val, mask, sem)


MEMORY_FUNCTIONS = ("load", "store", "atomic_cas", "atomic_rmw")


def _executor_call_code(interpreter: Any) -> Any:
    """The code of Triton's own ``GridExecutor.__call__``, followed through the verifier's wrappers of it (their
    closures and keyword-only defaults) to the function defined in Triton's interpreter module; None where it
    cannot be found (then memory operations are checked against the launch's tensors only)."""
    seen: set[int] = set()
    todo = [interpreter.GridExecutor.__dict__.get("__call__")]
    while todo:
        fn = todo.pop()
        if id(fn) in seen or not callable(fn):
            continue
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        if code is not None and code.co_filename == interpreter.__file__ and code.co_name == "__call__":
            return code
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        for value in (getattr(fn, "__kwdefaults__", None) or {}).values():
            todo += list(value) if isinstance(value, tuple) else [value]
    return None
