"""What the candidate's code did, watched from inside its child from before the candidate is imported.

Static checks read the code; this watches it run, so what the code's spelling hides is still seen. The hooks
(``hooks.py``) are installed before the candidate's import and checked after each forward. Watched: the import and
each construction of ``ModelNew`` by the harness (``phase``), and every forward (``run_forward``):

- **launches** (``JITFunction.run`` on a GPU, ``GridExecutor.__call__`` under the CPU interpreter): counted; the
  bytes of every storage a launch was handed (inputs and parameters excepted) are compared before and after it:
  what changed was written by that kernel (``provenance.credit_launch``), less what candidate code (a grid
  callable, a hook) wrote with torch inside the launch; under the CPU interpreter a kernel touches only the
  storages it was handed (``bounds.py``), and on any device every laundered storage a watched launch was not
  handed reads as poison until it returns (``_blind``: an address computed into one finds
  NaN, a write there is undone);
- **torch ops** (a ``TorchDispatchMode``): allocation, views, metadata, copies and fills are allowed; anything else
  is torch compute (in a forward: ``torch_compute`` in strict mode; while the model is built: allowed, and what it
  made is torch's). Triton's own launch path is exempt unless the op computes on this forward's data;
- **values leaving torch** (``.item()``, ``tolist``, and the live views ``numpy``, ``__array__``, ``__dlpack__``,
  ``to_dlpack``, the CUDA array interface): in a forward never of data no kernel computed, at most
  ``MAX_SCALAR_READS`` values in all; while the model is built or imported, no live view of more than that;
- **provenance** (``provenance.py``, ``origins.py``, ``copies.py``): every byte's class; memory the watch never saw
  made is ``FOREIGN``, and so are numbers from Python past ``HOST_VALUES`` a phase (fills, a launch's scalars);
  a launch handed foreign (or, in strict mode, torch-made) data writes that class; a launch that only
  re-arranges laundered data is a copy. Outputs are judged by ``rules.judge_record``;
- **shadows**: after every op and launch that writes a storage, a copy of its bytes; what the forward reads but the
  watch never saw written, a keyed checksum (``quiet.py``); before each launch and at the end both must still
  match (else ``tampering``: a thread, numpy through a raw address, a silenced watch);
- **streams** (``streams.py``): all device work on the stream the phase began on, and no CUDA graph.

Timed calls run the same watch with one set of classes per storage on the host (``run_forward(coarse=True)``).
Every other moment of candidate code runs inside a watch too (``phase``): the harness drops models, outputs and
failed forwards' exceptions inside one (``drop``: ``__del__`` and finalizers), explains errors inside one
(``explain``: a candidate exception's ``__str__``), and the garbage collector runs only there: from before the
import, automatic collection is off outside a watch (``hold_garbage``, ``_collected``), and each phase and forward
collects before its watch closes. In
those phases, as in a forward, torch compute and values leaving torch count against the candidate
(``ForwardRecord.judged``); only the import and the constructions may compute (their results are torch's).
Limits (docs/verifier.md): this runs in the candidate's own process; the audit hook and the static checks keep
candidate code from reaching it, the shadows catch what a silenced watch would miss, and the judge checks the
outputs itself. Memory reached through a raw address is beyond any Python watch: the child sandbox's to refuse.
"""

from __future__ import annotations

import functools
import gc
import math
import numbers as numbers_
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from tritonrl.verify.child import audit, fidelity, guards, hooks, probe, scramble, witness
from tritonrl.verify.child.aten_ops import (
    ALLOC_OPS,
    CARRIES_DATA,
    COPY_OPS,
    FILL_OPS,
    LIFT_OPS,
    META_OPS,
    READ_OPS,
    REBIND_OPS,
    Constexpr,
    is_a,
    is_view,
    launch_tensors,
    op_name,
    tensors,
)
from tritonrl.verify.child.bounds import BoundedMemory
from tritonrl.verify.child.hooks import without_dynamo_import  # noqa: F401 - the zygote's import
from tritonrl.verify.child.inert import qualname
from tritonrl.verify.child.interpreter import is_interpreter
from tritonrl.verify.child.origins import Origins
from tritonrl.verify.child.overrides import (
    module_overrides,
    module_tensors,
    tensor_class_changed,
    tensor_overrides,
    torch_rebound,
)
from tritonrl.verify.child.provenance import (
    CONST,
    COPIED,
    ECHO,
    FOREIGN,
    INPUT,
    KERNEL,
    LAUNDERED,
    PARAM,
    STALE,
    TAINTS_PERMISSIVE,
    TAINTS_STRICT,
    TORCH,
    UNSET,
    CoarseProvenance,
    Provenance,
    copy_class,
    copy_ends,
    credit_launch,
    launch_taint,
    moved,
    storage_key,
)
from tritonrl.verify.child.rules import storage_range
from tritonrl.verify.child.streams import graph_problem, stream_now
from tritonrl.verify.shared.wire import CODE_PATH

UNCOMPUTED = frozenset({INPUT, ECHO, COPIED, FOREIGN, UNSET})  # data no kernel computed: never read into Python
UNWRITTEN = "memory nothing wrote (a fresh torch.empty's values are undefined; on the CPU they are noise)"
# in-place ops that write random values without reading the tensor's own (``nn.init`` fills a fresh ``torch.empty``)
RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "geometric_",
                          "log_normal_", "cauchy_"})
MAX_SCALAR_READS = 8  # values one forward may read into Python (not enough to compute there)
HOST_VALUES = 16  # distinct numbers one phase may bring from Python into tensors (``Monitor.entered``)
HOST_INTS = 64  # numbers a forward's launches may bring in their kernels' own integer parameters (``ForwardInts``)
INT_BITS = 32  # the bits one of those numbers is worth, where a parameter's sequence is counted by its bits
# Bound when this module is imported, before any candidate code: patching torch afterwards changes nothing here.
_empty = torch.empty
_set = torch.Tensor.set_
_clone = torch.Tensor.clone
_cuda_sync = getattr(torch._C, "_cuda_synchronize", None)
_Tensor = torch.Tensor
_uint8 = torch.uint8
_getframe = sys._getframe
_fill_ = torch.Tensor.fill_
_copy_ = torch.Tensor.copy_
_from_weak = torch.UntypedStorage._new_with_weak_ptr
_collect = gc.collect
_freeze = gc.freeze
_gc_off = gc.disable
_gc_on = gc.enable
CONSTRUCTION = frozenset({"import", "build"})  # phases where torch may compute (what it made is torch's)
POISON_BYTE = 0xFF  # what a blinded storage reads as during a launch not handed it (NaN as any float; -1 as ints)


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """The whole storage behind ``t`` as a flat uint8 tensor (a view, no copy)."""
    return _set(_empty(0, dtype=_uint8, device=t.device), t.untyped_storage())


def _number(value: Any) -> bool:
    return is_a(value, numbers_.Real) and type(value) is not bool


def _host_key(n: Any) -> Any:
    """A number as Triton and torch will read it: a ``float`` or ``int`` subclass by its C value, never through
    methods of its own (a ``__float__`` answering the watch one number and Triton another: the twenty-fourth red
    team)."""
    kind = type(n)
    if issubclass(kind, float):
        return float.hex(n)
    if issubclass(kind, int):
        return int.__index__(n)
    if kind is tuple or issubclass(kind, (np.generic, complex)):  # a fill's position (``fill_positions``),
        return repr(n)  # numpy's scalars; a 0-d tensor's value may be complex
    return ("object", id(n))  # another class (one registered as a number): by identity, none of its methods run


def _int_width(value: Any) -> int:
    """How many numbers an integer counts as: one for each ``INT_BITS`` it carries (at least one). A table packed
    into one Python integer (the thirty-eighth red team: erf and its slope at 97 points, 48 bits each, one int read
    by the kernel as a constexpr global or handed as a constexpr argument, unpacked by constexpr shifts) is as many
    numbers as its bits make; an honest size, stride or seed is one or two."""
    return max(1, -(-abs(value).bit_length() // INT_BITS)) if type(value) is int else 1


def _host_keys(n: Any) -> list:
    """``_host_key`` of ``n``, and for an integer one more key for each further ``INT_BITS`` it carries
    (``_int_width``): what a phase's count of distinct numbers adds for ``n``."""
    key = _host_key(n)
    return [key, *(("bits", key, part) for part in range(1, _int_width(key)))]


def _leaves(value: Any, depth: int = 0) -> Iterator[tuple[Any, int]]:
    """``value`` itself, or what the tuples, lists and ``tl.constexpr`` it nests hold, each with how deep in them it
    sits (a Triton tuple argument or a constexpr tuple is a table's worth as much as as many scalars: the
    twenty-fourth red team), walked by their base classes' own iteration."""
    if is_a(value, Constexpr):
        value = value.value
    kind = type(value)
    if not _number(value) and issubclass(kind, (tuple, list)) and depth < 8:
        for item in (tuple.__iter__(value) if issubclass(kind, tuple) else list.__iter__(value)):
            yield from _leaves(item, depth + 1)
    else:
        yield value, depth


def _numbers_in(value: Any) -> Iterator[Any]:
    """The numbers in ``value``: itself, or inside the tuples, lists and ``tl.constexpr`` it nests."""
    return (leaf for leaf, _ in _leaves(value) if _number(leaf))


def _launch_leaves(kernel: Any, args: tuple, kwargs: dict) -> Iterator[tuple[Any, int]]:
    """``_leaves`` of what a launch hands its kernel's parameters (launch options aside)."""
    names = set(getattr(kernel, "arg_names", ()) or ())
    for value in [*args, *(v for k, v in kwargs.items() if k in names)]:
        yield from _leaves(value)


def scalar_arguments(kernel: Any, args: tuple, kwargs: dict, ints: bool) -> list:
    """The numbers a launch hands its kernel's parameters, in tuples too: floats always; integers inside a tuple or
    list always (a fixed-point table: the twenty-fifth red team passed erf as 97 ints); a parameter's own integer
    only where ``ints`` (the import and the constructions: a forward passes sizes, strides and a row index per
    launch)."""
    return [n for n, depth in _launch_leaves(kernel, args, kwargs)
            if _number(n) and (ints or depth or not isinstance(n, numbers_.Integral))]


def view_offsets(kernel: Any, args: tuple, kwargs: dict, every: bool) -> list:
    """Where in their storages the views a launch hands its kernel start (their nonzero ``storage_offset``): a kernel
    reads them back as numbers (``ptr.to(tl.int64)`` minus the storage's base), so they are Python's numbers as a
    launch's scalars are. The twenty-sixth red team passed an erf table in ``__init__`` as the offsets of 128 views
    of one buffer per launch, no number among the arguments. Views inside a tuple or list always; a parameter's
    own view only where ``every`` (the import and the constructions: a forward may hand a chunk's view per launch)."""
    return [int(t.storage_offset()) for t, depth in _launch_leaves(kernel, args, kwargs)
            if is_a(t, torch.Tensor) and (every or depth) and t.storage_offset()]


def kernel_code(kernel: Any) -> Any:
    """The Python function under a launched kernel (an Autotuner or Heuristics wraps a JITFunction, which wraps the
    function): its code object names the kernel across launches, or None."""
    fn = kernel
    for _ in range(5):
        code = getattr(fn, "__code__", None)
        if type(code) is types.CodeType:
            return code
        fn = getattr(fn, "fn", None)
    return None


def parameter_ints(kernel: Any, args: tuple, kwargs: dict) -> list[tuple[Any, int]]:
    """``(parameter, number)`` for each of a launch's own integer parameters (a ``tl.constexpr`` one too; read by
    their C value, ``_host_key``) and each tensor parameter's storage offset (a view's place, which a kernel reads
    back as a number: the twenty-sixth red team's table)."""
    names = list(getattr(kernel, "arg_names", ()) or ())
    found = []
    for i, value in [*enumerate(args), *((k, v) for k, v in kwargs.items() if k in names)]:
        name = names[i] if type(i) is int and i < len(names) else i
        if is_a(value, Constexpr):
            value = value.value
        if _number(value) and is_a(value, numbers_.Integral):
            found.append((name, _host_key(value)))
        elif is_a(value, torch.Tensor):
            found.append((name, int(value.storage_offset())))
    return found


class ForwardInts:
    """The numbers a forward's launches bring in their kernels' own integer parameters (and their views' storage
    offsets), by kernel and parameter. A parameter that takes one value brings one; one whose values step evenly
    from launch to launch (a row index, a chunk's offset) brings two, its start and its step; any other brings each
    value it took. An honest forward brings sizes, strides and loop indices: a few dozen numbers at most. A table
    of the op written in every forward from a launch's integers (the sixteenth red team: erf in fixed point, 64
    integers a launch, 65 launches) brings thousands. Past ``HOST_INTS`` the launch writes foreign data, as past
    ``HOST_VALUES`` for floats; the allowance is generous, since 64 numbers are an approximation's coefficients,
    which a kernel may also write as literals."""

    def __init__(self) -> None:
        # (kernel, parameter) -> [first, last, step, even, values, breaks]
        self.params: dict[tuple, list] = {}

    def add(self, kernel: Any, name: Any, value: int) -> None:
        state = self.params.get((kernel, name))
        if state is None:
            self.params[(kernel, name)] = [value, value, None, True, {value}, 0]
            return
        step = value - state[1]
        if state[2] is None:
            state[2] = step
        elif step != state[2]:
            state[3] = False
            state[5] += 1
        state[1] = value
        state[4].add(value)

    def within(self, kernel: Any, pairs: Iterable[tuple[Any, int]]) -> bool:
        """``(parameter, value)`` pairs of one launch of ``kernel`` added: whether the forward is still within
        ``HOST_INTS``."""
        for name, value in pairs:
            self.add(kernel, name, value)
        return self.brought() <= HOST_INTS

    def brought(self) -> int:
        """How many numbers the forward's launches brought so far: the distinct ones, or the bits their sequences
        can carry, ``INT_BITS`` a number, whichever is more (counting stops past ``HOST_INTS``). A parameter's value
        that breaks its even step carries up to log2 of the values it took: an alphabet of 50 spelled r16's table
        in base-50 digits, 64 arguments a launch, with fewer than 64 distinct numbers in all
        (``integrity/f51_c4_erf_table_in_base50_integer_arguments``). An honest forward's sizes change a few times."""
        numbers: set = set()
        wider = 0  # the numbers' further INT_BITS (``_int_width``): one huge integer is a table's worth
        bits = 0.0
        for first, _, step, even, values, breaks in self.params.values():
            new = (({first} if step is None else {first, step}) if even else values) - numbers
            wider += sum(_int_width(v) - 1 for v in new)
            numbers |= new
            bits += breaks * math.log2(max(2, len(values)))
            if max(len(numbers) + wider, bits / INT_BITS) > HOST_INTS:
                break
        return max(len(numbers) + wider, math.ceil(bits / INT_BITS))


def watch_grid(grid: Any, seen: list) -> Any:
    """``grid`` as Triton takes it, each value it gives the launch kept in ``seen``: a tuple, or what a callable grid
    returns when Triton calls it. The grid's sizes are numbers a kernel reads (``tl.num_programs``): a table can ride
    on them as on integer arguments (``ForwardInts``, parameters ``("grid", d)``)."""
    if not callable(grid):
        seen.append(grid)
        return grid

    def evaluated(meta):
        value = grid(meta)
        seen.append(value)
        return value
    return evaluated


def global_numbers(kernel: Any) -> list:
    """The numbers in the module globals a kernel reads, and the ``@triton.jit`` functions it calls read, and in
    their parameters' defaults: a ``tl.constexpr`` table bound at import is Python's data as a launch's scalars are
    (integers too: a block size or two is a handful, a fixed-point table is not), and so is one bound as a
    parameter's default (the thirtieth red team's erf tables, on the kernel and on a jit helper)."""
    found: list = []
    todo, seen = [kernel], set()
    while todo:
        fn = todo.pop()
        for _ in range(4):  # an Autotuner or Heuristics wraps a JITFunction, which wraps the function
            if not hasattr(fn, "fn"):
                break
            fn = fn.fn
        code, scope = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
        if type(code) is not types.CodeType or not is_a(scope, dict) or id(fn) in seen:
            continue
        seen.add(id(fn))
        if type(fn) is types.FunctionType:  # a parameter's default is a value the body reads as a global's
            found.extend(_numbers_in(fn.__defaults__ or ()))
            found.extend(_numbers_in(tuple((fn.__kwdefaults__ or {}).values())))
        for name in _names(code):
            value = dict.get(scope, name)
            if hasattr(value, "fn") and callable(value):
                todo.append(value)
            else:
                found.extend(_numbers_in(value))
    return found


@functools.cache
def _names(code: Any) -> frozenset[str]:
    """The global names ``code`` and the code objects nested in it read (code objects are immutable: once each)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if type(const) is types.CodeType:
            names |= _names(const)
    return frozenset(names)


def fill_positions(written: list) -> list[tuple[str, int, int]]:
    """Where fills write part of a storage (its first element and count): numbers from Python as the fill's
    value is; a fill of a whole storage says nothing by its position."""
    return [("at", t.storage_offset(), t.numel()) for t in written
            if t.numel() * t.element_size() < t.untyped_storage().nbytes()]


def _computes(func: Any) -> bool:
    """Whether an aten op computes (not an allocation, view, metadata, copy, fill, read or rebinding)."""
    name = op_name(func)
    return not (name in LIFT_OPS or name in META_OPS or is_view(func) or name in READ_OPS or name in REBIND_OPS
                or name in ALLOC_OPS or name in COPY_OPS or name in FILL_OPS)


# What a launch may be handed: a subclass of torch.Tensor (``x.as_subclass(C)``) brings methods of its own, and
# ``__torch_function__`` runs in every torch call on it, the watch's own reads (storage, offset, snapshots) included.
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


class ModelTampering(RuntimeError):
    """A module of the candidate's redefines nn.Module's machinery (``overrides.py``): not called."""


@dataclass
class ForwardRecord:
    """What one watched phase (a forward, the import, a construction) did."""

    launches: int = 0
    scalar_reads: int = 0
    unseen: str | None = None  # bytes that changed where the watch could not see (``witness.py``)
    shadows: dict = field(default_factory=dict)
    torch_ops: list[str] = field(default_factory=list)
    escapes: list[str] = field(default_factory=list)  # values that left torch against the rules (every mode)
    stopped: str | None = None  # a kernel's memory operation the verifier refused (``bounds``), caught or not
    stream: Any = None  # the CUDA stream the phase began on: all its work must be there (``Monitor.own_stream``)
    quiet: dict = field(default_factory=dict)  # storages read, not seen written: key -> (tensor, checksum)
    unowned: str | None = None  # work the timer could not own: another stream, a CUDA graph
    protected: list[tuple[str, int, int]] = field(default_factory=list)
    sources: list = field(default_factory=list)  # the inputs, parameters and buffers (``layout_problem``)
    provenance: Provenance | CoarseProvenance = field(default_factory=Provenance)
    host_values: set = field(default_factory=set)  # numbers brought from Python into tensors (``entered``)
    forward_ints: ForwardInts = field(default_factory=ForwardInts)  # a forward's launches' own integers
    coarse: bool = False
    phase: str = "forward"  # or "import", "build" (``CONSTRUCTION``), "drop", "explain"

    @property
    def judged(self) -> bool:
        """Torch compute and values leaving torch count against the candidate here (every phase but the import
        and the constructions, where torch may compute and what it made is remembered as torch's)."""
        return self.phase not in CONSTRUCTION

    def compute(self, name: str) -> None:
        if self.judged and name not in self.torch_ops:
            self.torch_ops.append(name)

    def escape(self, what: str) -> None:
        if what not in self.escapes:
            self.escapes.append(what)


class Monitor:
    """Launch hook plus torch-op watch plus byte provenance; one per child, installed before candidate import.
    ``strict=False`` (permissive mode): torch compute in a forward is allowed, and torch's data may feed a kernel
    (a copy of it is still not the kernel's work)."""

    def __init__(self, candidate_file: str = CODE_PATH, strict: bool = True) -> None:
        self.candidate_file = candidate_file
        self.strict = strict
        self.taints = TAINTS_STRICT if strict else TAINTS_PERMISSIVE
        self.refused = UNCOMPUTED | ({TORCH} if strict else set())
        self.origins = Origins()
        self.record: ForwardRecord | None = None
        self.in_launch = 0
        self.overflows = 0  # numbers past ``HOST_VALUES`` met inside a launch (``constexpr_values``)
        self._compiling: list[Any] = []  # the kernels of the launches under way (innermost last), by their code
        self.compiled_numbers: dict[Any, dict] = {}  # a kernel's code -> what its constexpr functions returned
        self.internal = 0  # > 0 while the monitor's own torch ops run (never accounted)
        self.total_launches = 0
        self._wrappers: list[tuple[Any, str, Any]] = []
        self._launch_codes: set = set()
        self._mode: type | None = None
        self._befores: list[dict] = []  # the snapshots of the launches under way (innermost last)
        self._memory: BoundedMemory | None = None
        self._hooks_running = 0  # > 0 while a kernel's pre-run hooks run (``_own_hooks``)
        self.failed: ForwardRecord | None = None  # the record of the last forward that raised (judged all the same)

    # ------------------------------------------------------------ installation
    def install(self) -> None:
        for owner, name, wrapper in self._make_wrappers():
            hooks.pose_as(wrapper, owner.__dict__.get(name))
            setattr(owner, name, wrapper)
            self._wrappers.append((owner, name, wrapper))
            audit.protect(wrapper)
            audit.protect(getattr(wrapper, "fget", wrapper))  # a property's getter
            audit.protect(getattr(wrapper, "__func__", wrapper))  # a static method's function

    def intact(self) -> bool:
        """The hooks are still the ones installed (a candidate that replaced them is tampering)."""
        return all(owner.__dict__.get(name) is wrapper for owner, name, wrapper in self._wrappers)

    def _make_wrappers(self) -> list[tuple[Any, str, Any]]:
        from triton.runtime.jit import JITFunction

        made: list[tuple[Any, str, Any]] = [(JITFunction, "run", hooks.launch_wrapper(JITFunction.run, self))]
        try:  # the interpreter's lowest launch point: ``InterpretedFunction.run`` and a bare executor both end here
            from triton.runtime.interpreter import GridExecutor
            made.append((GridExecutor, "__call__", hooks.executor_wrapper(GridExecutor.__call__, self,
                                                                          is_interpreter())))
        except ImportError:
            pass
        quiet: list[type] = []  # autotuning and heuristics benchmark and restore with torch ops of their own
        try:
            from triton.runtime.autotuner import Autotuner, Heuristics
            quiet += [Autotuner, Heuristics]
        except ImportError:
            pass
        made += [(cls, "run", hooks.quiet_wrapper(cls.run, self)) for cls in quiet]
        try:
            from triton.runtime.jit import ConstexprFunction
            made.append((ConstexprFunction, "__call__", hooks.constexpr_wrapper(ConstexprFunction.__call__, self)))
        except ImportError:  # a Triton without constexpr functions
            pass
        self._launch_codes.update(fn.__code__ for _, _, fn in made)
        made += hooks.export_hooks(self)
        made += hooks.storage_hooks(self)
        made += hooks.compiled_launch_hooks(self, JITFunction.run.__code__)  # not yet wrapped: Triton's own
        bounded = BoundedMemory.hook()  # the interpreter's loads and stores: only the launch's own storages
        if bounded is not None:
            self._memory, memory_hooks = bounded
            made += memory_hooks
            self._memory.on_violation = self._stopped
        self._mode = hooks.watch_mode(self)
        return made

    # ------------------------------------------------------------ during a phase
    def candidate_in_launch(self) -> bool:
        """Inside Triton's launch path, whether candidate code (a hook, a heuristic) is what is running now."""
        if self._hooks_running:  # a pre-run hook the candidate added: its doing, frame or not (a builtin)
            return True
        frame = _getframe(2)
        while frame is not None and frame.f_code not in self._launch_codes:
            if frame.f_code.co_filename == self.candidate_file:
                return True
            frame = frame.f_back
        return False

    def dispatched(self, func: Any, args: tuple, out: Any) -> None:
        """One aten op of the watched phase (the dispatch mode's call)."""
        if probe.active() and all(t.is_meta for t in (*tensors(args), *tensors(out))):
            return  # shapes only, at the GPU's shape (``probe.py``): no byte to account
        if not self.in_launch or self.candidate_in_launch():
            self.own_stream()
            self.account(func, args, out)
            if self.in_launch and _computes(func):  # every mode: a grid callable or a hook is no place for torch's work
                self.record.escape(f"torch compute inside a kernel's launch ({op_name(func)} in a grid callable or "
                                   "a hook: it runs after the launch's watch began, where the kernel can reach it)")
            if self.in_launch and self._befores:
                self._rebase(out)
        else:
            self.account_in_launch(func, args, out)

    def resizing(self, t: torch.Tensor) -> tuple[int, Any, tuple[str, int]]:
        """Before a ``resize_`` (or ``resize_as_``) of ``t``: its storage's size, its bytes' classes and its key. A
        storage grown moves to new memory (the old bytes copied over), which the op's accounting makes unset, all
        of it."""
        held = t.untyped_storage().nbytes()
        classes = self.record.provenance.classes_of_storage(t) if held else (None, set())
        return held, classes, storage_key(t)

    def resized(self, t: torch.Tensor, before: tuple[int, Any, tuple[str, int]]) -> None:
        """After it: the bytes ``t`` kept keep their classes (a table torch made at construction, then grown, is
        still torch's: the twentieth red team's ``resize_`` laundering), what it added is unset, holding noise
        (``scramble.py``), and nothing is said of the storage under its old address."""
        held, classes, old = before
        if storage_key(t) != old:
            self.record.provenance.forget(old)
        self.record.provenance.regrown(t, held, classes)
        scramble.fill(t, start=held)
        if not self.record.coarse:
            self._shadow(t)  # the noise is the watch's own write

    def own_stream(self) -> None:
        """Work of the candidate's on another stream than the phase began on (``streams.py``)."""
        record = self.record
        if record.stream is not None and record.unowned is None and stream_now() != record.stream:
            record.unowned = ("work on another CUDA stream than the forward's (a side stream or a graph capture): "
                              "the timer cannot own it; launch everything on the current stream")

    def exported(self, t: torch.Tensor, name: str, live: bool) -> None:
        """``t``'s values are leaving torch (``hooks.export_wrapper``): judged as a read of ``t.numel()`` values;
        outside a forward only a live view counts (a copy of values at construction carries no later input)."""
        record = self.record
        if self.in_launch and not self.candidate_in_launch():
            return
        if record.provenance.holds_unset(t):  # in every phase: what fresh memory holds decides nothing (the
            record.escape(f"{name} of {UNWRITTEN}")  # the twenty-third red team: str() of a fresh tensor in __init__)
            return
        if not record.judged:
            if live and t.numel() > MAX_SCALAR_READS:
                record.escape(f"{name} (a live view of tensor memory handed to another library while the model "
                              "was built or imported)")
            return
        self.read(t, name, t.numel())

    def constexpr_values(self, result: Any) -> None:
        """A ``triton.constexpr_function`` returned ``result`` inside a launch: Python computed it, at compile time
        on a GPU, in the kernel's body under the interpreter; its numbers enter the kernel as a launch's scalars do
        (the twenty-fifth red team's erf table, one ``constexpr_function`` call per entry in a ``static_range``)."""
        numbers = list(_numbers_in(result))
        if numbers and self._compiling and self._compiling[-1] is not None:
            kept = self.compiled_numbers.setdefault(self._compiling[-1], {})
            for n in numbers:
                if len(kept) <= HOST_VALUES:
                    kept.setdefault(_host_key(n), n)
        if numbers and self.record is not None and not self.entered(numbers):
            self.overflows += 1

    def compiled_in(self, code: Any) -> bool:
        """What the constexpr functions of ``code``'s kernel returned when it compiled enters this launch too: on a
        GPU they run only while a kernel compiles, and a kernel compiled once (a warm-up launch in ``__init__``)
        brings its table into every later launch from the compile cache, whose forwards call none of them (the
        twenty-ninth red team's erf table, accepted on an H200). Under the interpreter they run at each launch;
        counted twice, they are the same distinct numbers. Whether the phase is still within ``HOST_VALUES``."""
        kept = self.compiled_numbers.get(code)
        return not kept or self.entered(kept.values())

    def _grid_within(self, record: Any, code: Any, grids: list, every: bool) -> bool:
        """The sizes of a launch's grid (each value Triton took of it) counted as its integer parameters are: in a
        forward by kernel and dimension (``ForwardInts``), in the other phases as the phase's numbers."""
        sizes = [list(_numbers_in(grid)) for grid in grids]
        if every:
            return self.entered(n for dims in sizes for n in dims)
        return record.forward_ints.within(code, [(("grid", d), _host_key(n)) for dims in sizes
                                                 for d, n in enumerate(dims)])

    def entered(self, numbers: Iterable[Any]) -> bool:
        """``numbers`` (Python's) are written into tensors, by a fill or as a launch's scalar arguments: whether the
        phase is still within ``HOST_VALUES`` distinct ones. Data has an owner: a table of the op computed in
        Python (``math.erf`` at import, torch's table read back through ``repr``) and written element by element is
        Python's, not a kernel's, whatever wrote it; an honest phase brings a handful (eps, a slope, a scale, the
        zeros of a fill), as an approximation's coefficients may be written in a kernel as literals."""
        seen = self.record.host_values
        for n in numbers:
            seen.update(_host_keys(n))
        return len(seen) <= HOST_VALUES

    def read(self, t: torch.Tensor, name: str, count: int) -> None:
        """``count`` values of ``t`` go to Python: refused for data no kernel computed, counted otherwise."""
        record = self.record
        if not count:
            return
        refused = record.provenance.classes(t) & self.refused
        if refused:
            record.escape(f"{name} (values of inputs, copies of them, foreign, torch-made or unwritten data read into "
                          "Python)")
            return
        record.scalar_reads += count
        if record.scalar_reads > MAX_SCALAR_READS:
            record.escape(f"{name} (more than {MAX_SCALAR_READS} tensor values read into Python)")

    def launch(self, original: Callable, kernel: Any, args: tuple, kwargs: dict) -> Any:
        record = self.record
        self.in_launch += 1
        try:
            given = launch_tensors((args, kwargs))
            odd = next((type(t) for t in given if type(t) not in PLAIN_TENSORS), None)
            if odd is not None:  # before any read of it: the watch's own reads would run the subclass's methods
                message = (f"a kernel was handed a {qualname(odd)}, a subclass of torch.Tensor: launches take plain "
                           "tensors (a subclass's __torch_function__ runs in the verifier's own reads of it, "
                           "unwatched)")
                self._stopped(message)
                raise RuntimeError(message)
            self.refuse_overrides(given)
            watched = [t for t in given if not self._protected(t)]
            self.own_stream()
            unset = None
            # before the watch's own section: reading the candidate's arguments and globals may run its code (a
            # float subclass's ``__float__``), which must run watched (the twenty-fourth red team computed a whole
            # GEMM in one, unseen while the monitor's own ops are not accounted)
            every = record.phase != "forward"
            numbers = [*scalar_arguments(kernel, args, kwargs, ints=every), *global_numbers(kernel),
                       *view_offsets(kernel, args, kwargs, every)]
            own_ints = [] if every else parameter_ints(kernel, args, kwargs)
            code = kernel_code(kernel)
            grids: list = []
            if "grid" in kwargs:
                kwargs = {**kwargs, "grid": watch_grid(kwargs["grid"], grids)}
            self.internal += 1
            try:
                taint = launch_taint(record.provenance, given)
                if not self.entered(numbers):
                    taint = FOREIGN  # a table's worth of Python numbers: what the kernel writes is theirs
                if own_ints and not record.forward_ints.within(code, own_ints):
                    taint = FOREIGN  # a table's worth of integers, a launch at a time: the same
                if not record.coarse:
                    if given and given[0].device.type == "cuda" and _cuda_sync is not None:
                        _cuda_sync()  # the bytes before the launch: nothing still in flight on any stream
                    witness.check_shadows(record, watched)
                    witness.check_quiet(record, given)
                    before = {storage_key(t): _clone(_storage_bytes(t)) for t in watched}
                    self._befores.append(before)
                if self._memory is not None:
                    unset = self._unset_bytes(given)
                if given and given[0].device.type == "cpu":  # the interpreter's: a NaN the host made, looked at
                    fidelity.note_nan_arguments(given)
                guarded = guards.place(given) if not record.coarse else []  # a GPU's bounds (``guards.py``)
            finally:
                self.internal -= 1
            overflows = self.overflows
            self._compiling.append(code)
            try:
                with self._own_hooks(kernel), (self._memory.launch(given, unset) if self._memory is not None
                                                else nullcontext()) as stores, \
                        (self._blind(given) if not record.coarse else nullcontext()):
                    result = original(kernel, *args, **kwargs)
            finally:
                self._compiling.pop()
                if not record.coarse:
                    self._befores.pop()
                self.internal += 1
                try:
                    past = guards.lift(guarded)
                finally:
                    self.internal -= 1
                if past:
                    self._stopped(f"a kernel wrote past the end of a tensor it was handed (the storage at "
                                  f"{past[0]:#x}): memory no tensor of the launch holds")
            if self.overflows != overflows or not self.compiled_in(code):
                taint = FOREIGN  # a table's worth of numbers from constexpr functions: what it wrote is theirs
            if grids and not self._grid_within(record, code, grids, every):
                taint = FOREIGN  # a table's worth of grid sizes: the same
            record.launches += 1
            self.total_launches += 1
            if record.coarse:  # no snapshots: whatever the launch was handed, it may have written
                self.internal += 1
                try:
                    for t in watched:
                        record.provenance.launched(t, taint)
                        if stores is not None:
                            record.provenance.stored(t, stores.bytes_of(t))
                finally:
                    self.internal -= 1
            else:
                self._credit(watched, given, before, taint, stores)
            return result
        finally:
            self.in_launch -= 1

    def _unset_bytes(self, given: list) -> list[tuple[int, Any]]:
        """Under the CPU interpreter, for each storage handed to a launch that may hold bytes nothing wrote: its
        address and one flag per byte (``bounds.Stores``: the launch may not load them before it stores them)."""
        prov, found, seen = self.record.provenance, [], set()
        for t in given:
            key = storage_key(t)
            if key in seen or t.device.type != "cpu" or not t.untyped_storage().nbytes():
                continue
            seen.add(key)
            flags = prov.unset_flags(t)
            if flags is not None:
                found.append((t.untyped_storage().data_ptr(), flags.numpy().copy()))
        return found

    @contextmanager
    def tainted_blind(self, model: torch.nn.Module) -> Iterator[None]:
        """For a whole forward: every storage an earlier phase made of data no launch may be handed (its class is
        one of ``taints``: torch's, in strict mode, while the model was built; foreign data in every mode), the
        model's parameters and state aside, reads as poison, and gets its bytes back after. A launch handed such
        data writes that class (the output is refused), so no honest forward reads them; one that reaches them
        through a computed address would read them in a timed call the watch cannot tell from honest work (a
        product of two weights torch made at ``__init__``, used in place of computing it). The harness holds it
        around each coarse timed call, outside the timed region (no checksum is taken in those); in a watched
        forward ``_blind`` hides the same storages from every launch not handed them."""
        params, buffers = module_tensors(model)
        keep = {storage_key(t) for t in params} | {storage_key(b) for b in buffers
                                                  if self.origins.recall(b) not in self.taints}
        with self._poisoned(ref for key, (ref, _, cls, _) in list(self.origins.entries.items())
                            if cls in self.taints and key not in keep and key not in self.origins.pinned):
            yield

    @contextmanager
    def _blind(self, given: list) -> Iterator[None]:
        """During a watched launch, every storage met in this forward or an earlier phase that may hold data a
        kernel may not pass on as its own (torch's, foreign, earlier: ``LAUNDERED``) and that the launch was not
        handed reads as poison, and gets its bytes back after. A kernel reaches only what it was handed: one that
        computes an address into another storage (``x_ptr + delta``, ``delta`` from ``data_ptr()``; an address
        passed as an integer) reads poison there, and what it writes there is undone. This holds on a GPU, where
        no address of a compiled kernel is checked (under the CPU interpreter ``child/bounds.py`` also stops the
        kernel at the first such address). Honest kernels never read a storage they were not handed: it changes
        nothing for them."""
        with self._poisoned(self._laundered_storages({storage_key(t) for t in given})):
            yield

    @contextmanager
    def _poisoned(self, refs: Iterable[Any]) -> Iterator[None]:
        """The storages behind ``refs`` (weak references; gone ones skipped) read as ``POISON_BYTE`` until the
        block ends, then hold their own bytes again (the monitor's own ops: never accounted)."""
        saved: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.internal += 1
        try:
            for ref in refs:
                storage = _from_weak(ref.cdata)
                if storage is None or not storage.nbytes():
                    continue
                view = _set(_empty(0, dtype=_uint8, device=storage.device), storage)
                saved.append((view, _clone(view)))
                _fill_(view, POISON_BYTE)
        finally:
            self.internal -= 1
        try:
            yield
        finally:
            self.internal += 1
            try:
                for view, before in saved:
                    _copy_(view, before)
            finally:
                self.internal -= 1

    def _laundered_storages(self, handed: set) -> Iterator[Any]:
        """A weak reference to each storage known to hold laundered data, this launch's own and the harness's
        pinned memory (the arena) aside."""
        prov = self.record.provenance
        seen: set = set()
        for key, (ref, _) in list(prov.met.items()):
            seen.add(key)
            if key not in handed and key not in self.origins.pinned and prov.kinds.get(key, set()) & LAUNDERED \
                    and not moved(key, ref):
                yield ref
        for key, (ref, _, cls, _) in list(self.origins.entries.items()):
            if key not in seen and key not in handed and key not in self.origins.pinned and cls in LAUNDERED \
                    and not ref.expired() and not moved(key, ref):
                yield ref

    @contextmanager
    def _own_hooks(self, kernel: Any) -> Iterator[None]:
        """The kernel's pre-run hooks (``add_pre_run_hook``), run as the candidate's code, which they are: a
        builtin given as one (``torch.Tensor.copy_``) has no frame of the candidate's, and its copy into an idle
        kernel's output was credited to the kernel."""
        hooks_now = getattr(kernel, "pre_run_hooks", None)
        if not hooks_now:
            yield
            return

        def marked(hook: Callable) -> Callable:
            def run(*args: Any, **kwargs: Any) -> Any:
                self._hooks_running += 1
                try:
                    return hook(*args, **kwargs)
                finally:
                    self._hooks_running -= 1
            return run

        kernel.pre_run_hooks = [marked(h) for h in hooks_now]
        try:
            yield
        finally:
            kernel.pre_run_hooks = hooks_now

    def _rebase(self, out: Any) -> None:
        """Candidate code ran a torch op inside a launch (a grid callable, a pre-run hook): what it wrote is its
        own (``account`` classed it), so the launch's snapshot of those storages is taken again, and the kernel
        is credited only with what changes after (a red team's grid callable did ``out.copy_(x.T)`` into an idle
        kernel's output, credited to the kernel)."""
        self.internal += 1
        try:
            for t in tensors(out):
                key = storage_key(t)
                for before in self._befores:
                    if key in before:
                        before[key] = _clone(_storage_bytes(t))
        finally:
            self.internal -= 1

    def _credit(self, watched: list, given: list, before: dict, taint: int | None, stores: Any = None) -> None:
        if given and given[0].device.type == "cuda" and _cuda_sync is not None:
            _cuda_sync()
        self.internal += 1
        try:
            if credit_launch(self.record.provenance, watched, given, before, _storage_bytes, taint,
                             stores.bytes_of if stores is not None else None):
                self.record.escape("tensor bytes that changed during a launch its kernel did not store: host code "
                                   "the launch ran (a grid function, a hook, an argument's method) wrote them "
                                   "without a torch op")
            for t in watched + [t for t in given if self._protected(t)]:  # an input a task mutates: as written
                self._shadow(t)
        finally:
            self.internal -= 1

    def account(self, func: Any, args: tuple, out: Any) -> None:
        written = self._classify(func, args, out)
        if written and not self.record.coarse:
            for t in written:
                self._shadow(t)

    def _classify(self, func: Any, args: tuple, out: Any) -> list[torch.Tensor]:
        """Set the classes of what the op wrote (or flag it); the tensors it wrote."""
        name = op_name(func)
        prov = self.record.provenance
        outs, inputs = tensors(out), tensors(args)
        if name in LIFT_OPS:  # Python's or numpy's data (a view by its schema): foreign, unless one number
            for t in outs:
                if not prov.seen(t):
                    prov.mark(t, CONST if t.dim() == 0 and self.entered([t.item()]) else FOREIGN)
            return outs
        if name in META_OPS or is_view(func):
            return []
        if name in READ_OPS and inputs:
            if self.record.judged:
                self.read(inputs[0], "item", 1)
            return []
        if name in REBIND_OPS:  # set_ over an existing storage (``t.storage()[i]`` does that) changes no byte
            for t in outs[:1]:
                if name != "set_":  # resize_, resize_as_: classes carried over by ``resized``
                    prov.fresh(t)
            return outs[:1]
        if not func._schema.is_mutable:  # a new result (views are handled above): torch allocated it here
            for t in outs:
                prov.fresh(t)
        return self._write(name, func, prov, args, inputs, outs)

    def _write(self, name: str, func: Any, prov: Any, args: tuple, inputs: list, outs: list) -> list[torch.Tensor]:
        if name in ALLOC_OPS:
            for t in outs:
                scramble.fill(t)  # noise of its own, not the one value torch fills with (``scramble.py``)
                prov.mark(t, UNSET)
            return outs
        if name in COPY_OPS:
            dst, src = copy_ends(name, inputs, outs)
            if dst is not None and src is not None:
                prov.copy(dst, src)
            return [dst] if dst is not None else []
        if name in FILL_OPS:
            written = outs + (inputs[:1] if name.endswith("_") else [])
            value = inputs[1:2] if name == "fill_" else []  # ``fill_(t, v)`` with a tensor ``v``: a copy of it
            if value:  # a constant still, unless ``v`` holds what a kernel may not pass on (torch's, foreign ...)
                held = prov.classes(value[0])
                cls = CONST if held <= {CONST, KERNEL} else copy_class(held)
                if prov.holds_unset(value[0]):  # a byte nothing wrote: the value is undefined (the twenty-second
                    cls = UNSET                 # red team filled elements one by one from a half-written scratch)
            else:  # where a fill writes is Python's too: bit planes set by runs of ``fill_(1)`` (the 24th red team)
                cls = CONST if self.entered([*(n for n in args if _number(n)), *fill_positions(written)]) else FOREIGN
            for t in written:
                prov.mark(t, cls)
            return written
        self.unset_read(name, inputs)
        self.record.compute(name)
        written = outs + (inputs[:1] if func._schema.is_mutable else [])
        for t in written:
            prov.mark(t, TORCH)
            prov.remember(t, {TORCH})  # permissive mode: torch's result as made, for the outputs' last search
        return written

    def unset_read(self, name: str, inputs: list) -> None:
        """A torch op ``name`` reading ``inputs``: refused if one holds a byte nothing wrote (what a fresh allocation
        holds decides nothing); the random fills of ``nn.init`` write without reading."""
        prov = self.record.provenance
        read = inputs[1:] if name in RANDOM_FILLS else inputs
        if any(prov.holds_unset(t) for t in read):
            self.record.escape(f"{name} on {UNWRITTEN}")

    def refuse_overrides(self, found: list) -> None:
        """Before the watch reads ``found`` (a torch op's tensors, a launch's): none may hold an attribute of its own
        under one of ``torch.Tensor``'s names, nor ``torch.Tensor``'s class have changed (``overrides``): the watch's
        own reads would run the candidate's code where nothing is accounted. The phase is tampering, whatever
        catches the error."""
        problem = tensor_class_changed() or tensor_overrides(found)
        if problem is not None:
            if self.record is not None and self.record.unseen is None:
                self.record.unseen = problem
            raise RuntimeError(problem)

    def _stopped(self, message: str) -> None:
        """A kernel's memory operation was refused (``bounds``): the phase fails, whatever catches the error."""
        if self.record is not None and self.record.stopped is None:
            self.record.stopped = f"{message} (the verifier stopped the kernel; catching the error changes nothing)"

    def raised(self, func: Any, args: tuple) -> None:
        """A watched torch op raised: what it read still counts (an op that raises on what it finds, NaN for
        ``histc`` or an index out of range, tells its caller one bit of it, and ``__del__`` swallows the error:
        the twenty-second red team); an op that computes is torch compute, whether or not it finished."""
        name = op_name(func)
        if not _computes(func) or (self.in_launch and not self.candidate_in_launch()):
            return
        self.unset_read(name, tensors(args))
        self.record.compute(name)

    def _shadow(self, t: torch.Tensor) -> None:
        if self.record.phase == "forward":
            witness.keep(self.record, t, self._protected(t))

    def account_in_launch(self, func: Any, args: tuple, out: Any) -> None:
        """An op run inside Triton's launch path with no candidate frame on the stack: Triton's own (autotuning,
        the interpreter's copies) unless it computes on this forward's data (a builtin or an ``nn.Module`` given as
        a hook runs there without a frame of the candidate's). Allocations, fills and copies there compute
        nothing, but what they write is accounted all the same (``reset_to_zero`` zeroes an output between an
        autotuner's benchmark runs, ``restore_value`` copies one back): unaccounted, those bytes would look written
        behind the watch's back at the next launch."""
        name = op_name(func)
        if name in META_OPS or name in READ_OPS or is_view(func):
            return
        if name in ALLOC_OPS or name in REBIND_OPS or name in FILL_OPS or name in COPY_OPS or name in LIFT_OPS:
            self.account(func, args, out)
            return
        prov = self.record.provenance
        if any(prov.classes(t) & CARRIES_DATA for t in tensors(args)):
            self.account(func, args, out)

    def _protected(self, t: torch.Tensor) -> bool:
        lo_dev, lo, hi = storage_range(t)
        return any(dev == lo_dev and lo < end and start < hi for dev, start, end in self.record.protected)

    # ------------------------------------------------------------ the phases
    @contextmanager
    def phase(self, name: str) -> Iterator[ForwardRecord]:
        """A moment of candidate code outside a forward, watched: the import or a construction of its model
        (``CONSTRUCTION``: what it made is remembered, a table torch computed is torch's in every later forward;
        torch compute is allowed, live views are not), or the harness dropping or explaining the candidate's
        objects (``drop``, ``explain``: judged as a forward is, ``ForwardRecord.judged``). Garbage is collected
        before the watch closes (``_collected``)."""
        record = ForwardRecord(coarse=True, phase=name, stream=stream_now(),
                               provenance=CoarseProvenance(self.origins, self.taints, per_byte=True))
        self.record = record
        try:
            with torch.no_grad(), self._mode(), _collected():
                yield record
        finally:
            self.record = None
            self.origins.absorb(record.provenance, sums=True)
            record.unowned = record.unowned or graph_problem()

    def run_forward(self, model: torch.nn.Module, inputs: list, coarse: bool = False) -> tuple[Any, ForwardRecord]:
        """``model(*inputs)`` under watch; the record says what ran and who wrote which bytes. ``coarse`` (timed
        calls not watched byte by byte): the same watch of torch ops and launches, with one set of classes per
        storage, no device work and no snapshots around launches (a launch may have written all it was handed)."""
        problem = module_overrides(model)  # before any of the model's methods runs here (``overrides.py``)
        if problem is None:  # before the watch reads the inputs, parameters and buffers (an earlier call's
            problem = tensor_class_changed() or tensor_overrides(tensors(inputs) + sum(module_tensors(model), []))
        if problem is not None:  # inputs are handed to every timed call)
            raise ModelTampering(problem)
        record = self._forward_record(model, inputs, coarse)
        self.record = record
        try:
            with torch.no_grad(), self._mode(), _collected(enabled=not coarse):
                try:
                    output = model(*inputs)
                except BaseException:
                    self.failed = record  # what a forward that raised did is judged too (``Child.do_run``)
                    raise
            # rebound by the forward: next time too late; the outputs before the watch's last reads of them
            record.unseen = (record.unseen or module_overrides(model) or tensor_class_changed() or torch_rebound()
                             or tensor_overrides(tensors(output)))
            if not coarse and record.unseen is None:  # a timed call's checks run after its region (``Child.do_time``)
                self.internal += 1
                try:
                    if _cuda_sync is not None and any(t.device.type == "cuda" for t in tensors(inputs)):
                        _cuda_sync()
                    record.provenance.settle_singles()  # one-element launches, taken together
                    record.provenance.settle_outputs(tensors(output))  # copies of torch's data, whatever the path
                    witness.check_shadows(record)
                    witness.check_quiet(record)
                    record.unowned = record.unowned or graph_problem()
                finally:
                    self.internal -= 1
        finally:
            self.record = None
            record.shadows, record.quiet = {}, {}
            self.origins.absorb(record.provenance, sums=not coarse)
        return output, record

    def _forward_record(self, model: torch.nn.Module, inputs: list, coarse: bool) -> ForwardRecord:
        """The record a forward starts with: inputs, parameters and the buffers the watch vouches for (made from
        what it saw, or equal to the reference's own) marked and protected; other memory as ``origins`` knows it."""
        params, buffers = module_tensors(model)
        record = ForwardRecord(protected=[storage_range(t) for t in tensors(inputs) + params + buffers],
                               sources=tensors(inputs) + params + buffers,
                               coarse=coarse, stream=stream_now(),
                               provenance=(CoarseProvenance if coarse else Provenance)(self.origins, self.taints))
        for t in tensors(inputs):
            record.provenance.mark(t, INPUT)
        for t in params + [b for b in buffers if self.origins.recall(b) == STALE]:
            record.provenance.mark(t, PARAM)
            record.provenance.keep_unset(t)
        if not coarse:
            self.internal += 1
            try:
                witness.begin(record, tensors(inputs) + params + buffers,
                              any(self.origins.changed(t) for t in params + buffers))
            finally:
                self.internal -= 1
        return record


def hold_garbage() -> None:
    """Before the candidate's import: what exists now is never collected (``gc.freeze``: each later collection
    scans only what was made since), and automatic collection is off until a watch turns it on (``_collected``).
    Otherwise a collection could run a candidate's ``__del__`` or ``gc.callbacks`` anywhere, in the harness's own
    code between two watches (where the judge's next inputs are already in the arena)."""
    _freeze()
    _gc_off()


@contextmanager
def _collected(enabled: bool = True) -> Iterator[None]:
    """Garbage collection inside a watched phase or forward: automatic, as usual (turned off there too, the
    Triton interpreter's own cycles piled up and its forwards ran 3x slower); at the end, still inside the watch,
    a full collection (a candidate's finalizers run there and count as the phase's), then what survives is frozen
    (the next collection scans only what is made after: the 44,000 objects of Triton's caches after a first
    launch took 20-70 ms a collection on a busy 2-core CPU; a cycle that becomes garbage later is never
    collected, so its ``__del__`` never runs, watched or not), and automatic collection is off again until the
    next watch (the candidate may have turned it on). ``enabled=False`` (timed calls): no full collection in the
    timed region; the next phase's collects."""
    _gc_on()
    try:
        yield
    finally:
        if enabled:
            _collect()
            _freeze()
        _gc_off()
