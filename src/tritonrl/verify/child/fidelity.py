"""Where Triton's CPU interpreter is kinder than a GPU, made as strict as the GPU (candidate child, CPU only).

Installed with the other interpreter shims (``interpreter.install_interpreter_compat``) before the candidate is
imported. Each one makes a kernel that a GPU would run wrongly fail here too, and changes nothing for a kernel
that is right on a GPU:

* **TF32 dot**: ``tl.dot`` of fp32 operands at its default precision (``tf32``, as on an H100) multiplies inputs
  whose mantissas are rounded to TF32's 10 bits; the interpreter multiplied full fp32 values, so a TF32 kernel was
  exact here and ~1e-3 off on the GPU. ``input_precision="ieee"`` (and ``tf32x3``) keep fp32 products, as do
  ``bf16x3`` and ``bf16x6``, which a GPU's CUDA backend takes (Triton 3.6 and 3.9) and the interpreter refused (an
  honest kernel of the thirty-fifth red team, ``h10``), are taken and computed as the GPU splits them into bf16
  parts (``_bf16_split_dot``): what the parts cannot hold is lost here too.
* **bf16 values**: the interpreter keeps bf16 as raw 16-bit patterns, and its arithmetic, comparisons and
  ``tl.dot`` ran on those integers (``x > 0`` true for negatives; dot products ~1e10 off). They now run on the
  values (in fp32, rounded back to bf16 where the result is bf16), as the GPU does.
* **Python in a kernel**: a kernel body runs as Python here, so it could call a plain Python function, numpy or
  torch, or reach its tensors' host arrays (``x.handle.data``, ``getattr(x, "handle")``); a GPU compiles it and
  rejects all of these. Before each launch the kernel goes through Triton's GPU front end (``frontend.py``): what
  it rejects raises ``InterpreterOnly`` (flag ``interpreter_only``). A jit helper called from a kernel no longer
  leaves the interpreter's patches of ``triton.language`` behind (they would break that front end).
* **program order and races**: the interpreter runs a launch's programs one at a time, in order, so a program that
  read what an earlier one wrote (a load-add-store across programs, a running sum over program ids) looked right.
  Programs now run in a shuffled order (its seed is secret), and every load and store is recorded by program: a
  location one program stores to and another loads or stores (with a different value) raises ``DataRace`` (flag
  ``data_race``). Atomics are how programs may share a location: many programs may update one atomically (a sum,
  a counter, a ticket), but a *read* of a location another program updates (a plain load, an atomic load, or an
  atomic that changes nothing, ``atomic_add(p, 0)``) sees whatever that program has done by then on a GPU, while
  the interpreter has always finished it (and an atomic ticket that hands out blocks in start order undoes the
  shuffle): that is a race too. A lock orders what it guards: between a program's ``atomic_cas`` that takes a
  one-word lock (it found the expected value and changed it) and its ``atomic_xchg`` that gives it back, its loads,
  stores and atomics count as those of one program, the lock's, as mutual exclusion makes them on a GPU (the
  tutorial's layer-norm backward sums its partial weight gradients so); their order between programs is the
  shuffle's, as atomics' is. Within one program, a lane (an element's place in a block) that loads what another
  lane stored, with no ``tl.debug_barrier()`` since, races too: the lanes are threads that run at once on a GPU,
  while the interpreter runs the block as one step (``_Lanes``; a lane reading its own store is ordered).

Limits: a lane is a place, counted in order, in a block of one size (the same pointer layout, the same thread);
loads and stores of blocks of other sizes, or of one element, are not compared within a program, and a barrier the compiler adds on
its own (a reduction across warps) is not one here. The race check sees ``tl.load``/``tl.store`` and atomics
through pointers, and what the interpreter lowers to them (a tensor descriptor's loads and stores, in Triton 3.9:
``integrity/r24_sum_dim_race_via_tensor_descriptor``; an older Triton's block pointers may not be); a race between
programs that happens to produce the same bytes is not reported; a read that waits for another program correctly
(a spin on a flag) is reported as a race all the same (kernels that need such cross-program order within one launch
are rare, and cannot be checked here).
"""

from __future__ import annotations

import dataclasses
import random
import re
import secrets
import sys
import textwrap
from collections.abc import Callable
from typing import Any

RACE_EXAMPLES = 3  # addresses named in a race's message
_getframe = sys._getframe  # bound before the candidate is imported


class DataRace(RuntimeError):
    """Programs of one launch shared memory without atomics: on a GPU they run at once, the result is timing."""


class InterpreterOnly(RuntimeError):
    """A kernel body does what only the interpreter runs (a plain Python call, a tensor's host handle)."""


# Whether a hint the values do not bear out stops the kernel (``_check_hint``): the judge's ``hold_hints``, off only
# in the CPU cross-check of a GPU verdict (a GPU judged the values; the question there is memory, not hints)
HOLD_HINTS = True
POINTER_ALIGNMENT = 64  # bytes: the CPU allocator's (c10's), the arena's slots 256; a GPU's allocations 256 or more
LOG2E_BITS = 0x3FB8AA3B  # log2(e) in float32: Triton's tl.exp is ex2.approx.f32 of x times it (ptx_lowering.py)
FP8_SATURATED: dict[Any, float] = {}  # fp8 type -> its largest finite value (``install``: float32 casts saturate there)
GPU_DOT_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")  # the CUDA backend's, Triton 3.6 and 3.9


def _gpu_dot_precisions(builder: Any) -> None:
    """``builder``'s options take every ``tl.dot`` input precision a GPU's backend takes (``GPU_DOT_PRECISIONS``)."""
    options = getattr(builder, "options", None)
    if options is None or not dataclasses.is_dataclass(options):
        return
    allowed = tuple(options.allowed_dot_input_precisions)
    extra = tuple(p for p in GPU_DOT_PRECISIONS if p not in allowed)
    if extra:
        builder.options = dataclasses.replace(options, allowed_dot_input_precisions=allowed + extra)


class FalseHint(RuntimeError):
    """A ``tl.multiple_of`` or ``tl.max_contiguous`` hint the values do not bear out: a GPU's compiler acts on hints
    (vectorized loads and stores, masks folded), so the kernel's result there is undefined."""


class _Accesses:
    """The loads and stores of the launch in flight, by program (element addresses; store values as bytes)."""

    def __init__(self) -> None:
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.order: list[tuple[int, int, int]] = []
        self.program = 0
        self.locks: set[int] = set()  # addresses of the locks the running program holds
        self.reorders: dict[tuple, Any] = {}  # (source shape, target shape) -> the launch's order (``reorder``)
        self.seed = 0
        self.clear()

    def start(self, grid: tuple[int, int, int], seed: int) -> None:
        self.grid = grid
        self.seed = seed
        self.order = [(x, y, z) for x in range(grid[0]) for y in range(grid[1]) for z in range(grid[2])]
        random.Random(seed).shuffle(self.order)
        self.clear()
        self.reorders: dict[tuple, Any] = {}

    def clear(self) -> None:
        """Forget the launch's accesses (its end, or a new launch)."""
        self.loads: list[tuple[int, Any]] = []
        self.stores: list[tuple[int, Any, Any]] = []
        self.updates: list[tuple[int, Any]] = []  # addresses changed by atomics, by program
        # When each load and store happened (a count of the launch's accesses: its programs run one at a time), and
        # the atomics that order memory between programs
        self.clock = 0
        self.load_times: list[int] = []
        self.store_times: list[int] = []
        self.store_scalar: list[bool] = []  # each store of a one-element block
        self.fences: list[tuple] = []  # (actor, addresses, when, release, acquire, its result used, width, scalar)
        self.barriers: dict[int, list[int]] = {}  # actor -> when it passed each tl.debug_barrier()
        self._by_actor: tuple[int, dict] | None = None  # the fences by actor, made when a race is weighed
        self.lanes = _Lanes()  # the running program's stores since its last barrier, by lane
        self.intra: str | None = None  # the launch's first race inside a program (lanes over each other)

    def load(self, actor: int, addresses: Any) -> None:
        self.loads.append((actor, addresses))
        self.load_times.append(self._tick())

    def store(self, actor: int, addresses: Any, bits: Any, scalar: bool = False) -> None:
        """A store (``scalar``: of a one-element block, made by the program's first thread, as its scalar atomics
        are: Triton predicates both on that thread)."""
        self.stores.append((actor, addresses, bits))
        self.store_times.append(self._tick())
        self.store_scalar.append(scalar)

    def fence(self, actor: int, addresses: Any, sem: Any, scope: Any, width: int, used: bool,
              scalar: bool = False) -> None:
        """An atomic's memory order (the PTX memory model's release/acquire patterns; a read-modify-write continues
        a release sequence, so every later ticket-taker synchronizes with every earlier one), as far as a GPU's
        threads carry it (``synchronized``): ``sem`` release (or acq_rel) orders the program's stores made before a
        ``tl.debug_barrier()`` that precedes it (a scalar atomic is one thread's: Triton 3.6 puts no barrier before
        it, 3.9 does; the thirty-sixth red team's ``a06``), and a scalar atomic orders the program's scalar stores
        before it (the same thread's: Triton 3.6 predicates both on the program's first thread, read from its PTX;
        ``h03``); acquire (or acq_rel) orders the program's later loads
        when its result is used (Triton hands a scalar atomic's result to every thread through shared memory,
        behind a barrier) or a barrier follows it. Only atomics of one width on one address pair up (``width``, in
        bytes: PTX orders none between a 32- and a 64-bit atomic, ``a09``); ``scope`` cta orders nothing between
        programs (each is a CTA)."""
        name = getattr(sem, "name", str(sem)).rsplit(".", 1)[-1].upper()
        if "CTA" in getattr(scope, "name", str(scope)).upper() or not addresses.size:
            return
        release, acquire = name in ("RELEASE", "ACQUIRE_RELEASE", "ACQ_REL"), name in ("ACQUIRE", "ACQUIRE_RELEASE",
                                                                                        "ACQ_REL")
        if release or acquire:
            self.fences.append((actor, addresses, self._tick(), release, acquire, used, width, scalar))

    def barrier(self) -> None:
        """The running program passed a ``tl.debug_barrier()``: its threads' accesses before are ordered before its
        threads' accesses after."""
        self.barriers.setdefault(self.actor(), []).append(self._tick())

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def synchronized(self, writer: int, stored: int, reader: int, loaded: int, scalar: bool = False) -> bool:
        """Whether the writer's store at ``stored`` (``scalar``: one-element stores only) happens before the
        reader's load at ``loaded``: the writer released a location after its store (a barrier between, or both
        scalar), and the reader acquired it after that and before its load (``fence``)."""
        import numpy as np

        if writer < 0 or reader < 0:  # a lock's accesses: one actor already
            return False
        if self._by_actor is None or self._by_actor[0] != len(self.fences):
            by_actor: dict[int, list] = {}
            for fence in self.fences:
                by_actor.setdefault(fence[0], []).append(fence)
            self._by_actor = (len(self.fences), by_actor)
        fences = self._by_actor[1]
        fenced = [b for b in self.barriers.get(writer, ()) if b > stored]  # the writer's barriers after the store
        released = [(a, t, w) for _, a, t, rel, _, _, w, one in fences.get(writer, ())
                    if rel and t > stored and ((fenced and fenced[0] < t) or (scalar and one))]
        if not released:
            return False
        for _, a, t, _, acq, used, w, _ in fences.get(reader, ()):
            if not (acq and t < loaded) or not (used or any(t < b < loaded for b in self.barriers.get(reader, ()))):
                continue
            if any(t_r < t and w_r == w and np.intersect1d(a_r, a).size for a_r, t_r, w_r in released):
                return True
        return False

    def reorder(self, source: tuple, target: tuple, size: int, np: Any) -> Any:
        """The launch's order for a reshape from ``source`` to ``target`` that may reorder: drawn once a launch (every
        program's reshape between the two shapes takes it, as one compiled layout serves them all), the inverse for
        the way back."""
        if (source, target) not in self.reorders:
            order = np.random.default_rng([self.seed, len(self.reorders)]).permutation(size)
            self.reorders[(source, target)], self.reorders[(target, source)] = order, np.argsort(order)
        return self.reorders[(source, target)]

    def program_index(self, x: int, y: int, z: int) -> tuple[int, int, int]:
        """The program run at the loop's step (x, y, z): the step's place in the shuffled order."""
        step = (x * self.grid[1] + y) * self.grid[2] + z
        chosen = self.order[step] if step < len(self.order) else (x, y, z)
        self.program = (chosen[0] * self.grid[1] + chosen[1]) * self.grid[2] + chosen[2]
        self.locks = set()
        self.lanes = _Lanes()
        return chosen

    def actor(self) -> int:
        """Who an access belongs to: the running program, or while it holds a lock, the lock (a negative id)."""
        return -1 - min(self.locks) if self.locks else self.program


class _Lanes:
    """One program's loads, plain stores and atomic updates since its last ``tl.debug_barrier()``: for each block
    shape, the addresses, the lane (the element's place in the block) behind each, and the value's bits (an
    atomic's: none, its result is not known there). On a GPU a program's lanes are threads that run at once, with
    no order between two lanes but a barrier: a lane that loads what another lane stored or atomically updated reads
    whatever that lane has done by then; a lane storing where another lane stored another value may land first or
    last; a lane storing over what another lane loads may land before that load. The interpreter runs a block as
    one step, so the load always sees the store, the later store always wins and every load comes first (the
    twenty-fifth to twenty-seventh red teams: partial sums or a scratch row read back in reversed lane order; the
    thirty-second's: a reload of atomic sums, a second store in reversed lane order, a block reversed in place). The
    same lane (the same place in a block of as many elements, counted in order: the same thread, for one pointer
    layout, whatever the block's shape, so a reshape changes nothing) is ordered with itself; a block of one
    element is not compared, nor blocks of other sizes, except that an address two lanes or more wrote is another
    thread's for any reader. A store of the value already there, or already stored, changes nothing and is no
    race."""

    def __init__(self) -> None:
        self.stored: dict[int, list] = {}  # block size -> [(addresses, lanes, bits or None)]
        self.sorted: dict[int, tuple] = {}  # size -> (addresses, each one's lowest and highest lane), made lazily
        self.read: dict[int, list] = {}  # block size -> [(addresses, the mask, the values loaded)]

    def store(self, size: int, addresses: Any, lanes: Any, bits: Any = None) -> None:
        if addresses.size and size > 1:
            self.stored.setdefault(size, []).append((addresses, lanes, bits))
            self.sorted.pop(size, None)

    def load(self, size: int, addresses: Any, where: Any, data: Any) -> None:
        """A load's addresses, its mask and the block it read: lanes and bits are made only for a store near them."""
        if addresses.size and size > 1:
            self.read.setdefault(size, []).append((addresses, where, data))

    def foreign_write(self, size: int, addresses: Any, lanes: Any, bits: Any, np: Any) -> Any:
        """The stored addresses another lane of the program wrote another value to since the barrier (an atomic
        update counts as another value), or loaded while they held another value (a lane that may not have loaded
        yet on a GPU), in a block of this size; an empty array if none."""
        if not addresses.size:
            return addresses[:0]
        first, last = addresses.min(), addresses.max()
        reads = [(a, w, d) for a, w, d in self.read.get(size, ()) if a.min() <= last and a.max() >= first]
        reads = [(a, np.flatnonzero(w), _bits(np.broadcast_to(np.asarray(d), w.shape)[w], np)) for a, w, d in reads]
        return np.union1d(_clashes(self.stored.get(size), addresses, lanes, bits, np),
                          _clashes(reads, addresses, lanes, bits, np))

    def foreign_read(self, size: int, addresses: Any, lanes: Any, np: Any) -> Any:
        """The loaded addresses another lane of the program wrote since the barrier (an empty array if none): in a
        block of this size, by a lane other than the loading one; in a block of another size, whose lanes map to
        threads otherwise, by two lanes or more (one of them is another thread than the reader)."""
        if not addresses.size:
            return addresses[:0]
        hit = np.zeros(addresses.size, dtype=bool)
        for written in self.stored:
            addr, low, high = self.written(written, np)
            at = np.clip(np.searchsorted(addr, addresses), 0, addr.size - 1)
            other = (low[at] != lanes) | (high[at] != lanes) if written == size else low[at] != high[at]
            hit |= (addr[at] == addresses) & other
        return addresses[hit]

    def stored_under(self, size: int, addresses: Any, lanes: Any, np: Any) -> Any:
        """The addresses an atomic of block ``size`` updates where another lane of the program made a plain store
        since the barrier: in a block of this size, by a lane other than the updating one; in a block of another
        size, an address two lanes of the atomic or more update (one of them is another thread than the storer)."""
        raced = _clashes(self.stored.get(size), addresses, lanes, None, np)
        order = np.sort(addresses)
        shared = np.unique(order[1:][order[1:] == order[:-1]])  # updated by two lanes or more
        for other, entries in self.stored.items():
            if other != size and shared.size:
                plain = [x for x, _, b in entries if b is not None]
                if plain:
                    raced = np.union1d(raced, np.intersect1d(shared, np.concatenate(plain)))
        return raced

    def written(self, size: int, np: Any) -> tuple:
        """The addresses blocks of ``size`` wrote, sorted, and each one's lowest and highest writing lane."""
        if size not in self.sorted:
            a = np.concatenate([x for x, _, _ in self.stored[size]])
            lane = np.concatenate([x for _, x, _ in self.stored[size]])
            order = np.lexsort((lane, a))
            a, lane = a[order], lane[order]
            starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
            self.sorted[size] = (a[starts], lane[starts], np.maximum.reduceat(lane, starts))
        return self.sorted[size]


def _clashes(entries: list | None, addresses: Any, lanes: Any, bits: Any, np: Any) -> Any:
    """The addresses among ``addresses`` (stored by ``lanes`` with ``bits``; ``bits`` None: updated by an atomic) that
    an entry of another lane touched with other bits (an entry's bits None: an atomic's, always other; an atomic
    against plain stores only). Entries whose address range misses the store's are skipped unread."""
    if not entries:
        return addresses[:0]
    first, last = addresses.min(), addresses.max()
    near = [e for e in entries if e[0].size and e[0].min() <= last and e[0].max() >= first]
    if not near:
        return addresses[:0]
    a = np.concatenate([x for x, _, _ in near])
    order = np.argsort(a, kind="stable")
    a = a[order]
    low, high = np.searchsorted(a, addresses, "left"), np.searchsorted(a, addresses, "right")
    count = high - low
    if not count.any():
        return addresses[:0]
    lane = np.concatenate([x for _, x, _ in near])[order]
    known = np.concatenate([np.full(x.size, b is not None) for x, _, b in near])[order]
    value = np.concatenate([b if b is not None else np.zeros(x.size, dtype=np.uint64) for x, _, b in near])[order]
    new = np.repeat(np.arange(addresses.size), count)  # each earlier access of a stored address, paired
    old = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count) + np.repeat(low, count)
    if bits is None:  # an atomic update: against plain stores only (atomics commute), whatever their values
        clash = (lane[old] != lanes[new]) & known[old]
    else:
        clash = (lane[old] != lanes[new]) & (~known[old] | (value[old] != bits[new]))
    return np.unique(addresses[new[clash]])


_ACCESSES = _Accesses()
_LOAD_WATCH: list | None = None  # the load addresses of the launches under ``watch_loads``, else None


def watch_loads(stop: bool = False) -> list | None:
    """Start recording every address loaded (plain and atomic reads) until ``watch_loads(stop=True)``; the list the
    addresses go to (``interpreter._compare_configs`` tells a launch's inputs from its outputs with it)."""
    global _LOAD_WATCH
    _LOAD_WATCH = None if stop else []
    return _LOAD_WATCH


def find_race(loads: list, stores: list, updates: list = (), order: _Accesses | None = None) -> str | None:
    """A description of the first cross-program conflict among this launch's accesses, or None. With ``order`` (the
    launch's record: when each access happened, its ordering atomics), a load of what another program stored is no
    race where the store happens before the load (``_Accesses.synchronized``)."""
    import numpy as np

    if loads and updates:
        race = _read_of_update(loads, updates, np)
        if race:
            return race
    if not stores:
        return None
    s_addr = np.concatenate([a for _, a, _ in stores])
    if not s_addr.size:  # stores whose every lane was masked off (a ReLU keeping only positives of a negative block)
        return None
    s_pid = np.concatenate([np.full(a.shape, p, dtype=np.int64) for p, a, _ in stores])
    s_val = np.concatenate([v for _, _, v in stores])
    order_of_stores = np.lexsort((s_pid, s_addr))
    s_addr, s_pid, s_val = s_addr[order_of_stores], s_pid[order_of_stores], s_val[order_of_stores]
    first = np.r_[True, s_addr[1:] != s_addr[:-1]]
    starts = np.flatnonzero(first)
    writers = np.add.reduceat(np.r_[True, (s_addr[1:] != s_addr[:-1]) | (s_pid[1:] != s_pid[:-1])].astype(np.int64),
                              starts)
    values_differ = np.logical_or.reduceat(np.r_[False, (s_addr[1:] == s_addr[:-1]) & (s_val[1:] != s_val[:-1])],
                                           starts)
    ww = starts[(writers > 1) & values_differ]
    if ww.size:
        return f"programs store different values to the same location (address {int(s_addr[ww[0]]):#x})"
    if not loads:
        return None
    single = starts[writers == 1]
    w_addr, w_pid = s_addr[single], s_pid[single]
    l_addr = np.concatenate([a for _, a in loads])
    l_pid = np.concatenate([np.full(a.shape, p, dtype=np.int64) for p, a in loads])
    at = np.searchsorted(w_addr, l_addr)
    at[at >= w_addr.size] = 0
    hit = (w_addr.size > 0) & (w_addr[at] == l_addr) & (w_pid[at] != l_pid)
    if hit.any() and order is not None and order.fences:
        s_time = np.concatenate([np.full(a.shape, t, dtype=np.int64) for (_, a, _), t in zip(stores, order.store_times)])
        w_time = np.maximum.reduceat(s_time[order_of_stores], starts)[writers == 1]  # a writer's last store there
        s_one = np.concatenate([np.full(a.shape, one) for (_, a, _), one in zip(stores, order.store_scalar)])
        w_one = np.logical_and.reduceat(s_one[order_of_stores], starts)[writers == 1]  # scalar stores only
        l_time = np.concatenate([np.full(a.shape, t, dtype=np.int64) for (_, a), t in zip(loads, order.load_times)])
        at_hit = np.flatnonzero(hit)
        writer, reader = w_pid[at[at_hit]], l_pid[at_hit]
        for w, r in dict.fromkeys(zip(writer.tolist(), reader.tolist())):  # in the order met, until one races
            pair = at_hit[(writer == w) & (reader == r)]
            if not order.synchronized(w, int(w_time[at[pair]].max()), r, int(l_time[pair].min()),
                                      bool(w_one[at[pair]].all())):
                break
            hit[pair] = False
    if hit.any():
        k = np.flatnonzero(hit)[:RACE_EXAMPLES]
        where = ", ".join(f"{int(l_addr[i]):#x}" for i in k)
        return (f"a program loads what another program of the same launch stores (address {where}): programs run "
                "at once on a GPU, so what it reads depends on timing")
    return None


def _read_of_update(loads: list, updates: list, np: Any) -> str | None:
    """A load of a location that another program of the launch changes with an atomic."""
    u_addr = np.concatenate([a for _, a in updates])
    if not u_addr.size:  # atomics whose every lane was masked off
        return None
    u_pid = np.concatenate([np.full(a.shape, p, dtype=np.int64) for p, a in updates])
    order = np.argsort(u_addr, kind="stable")
    u_addr, u_pid = u_addr[order], u_pid[order]
    starts = np.flatnonzero(np.r_[True, u_addr[1:] != u_addr[:-1]])
    addr, low, high = u_addr[starts], np.minimum.reduceat(u_pid, starts), np.maximum.reduceat(u_pid, starts)
    l_addr = np.concatenate([a for _, a in loads])
    l_pid = np.concatenate([np.full(a.shape, p, dtype=np.int64) for p, a in loads])
    at = np.clip(np.searchsorted(addr, l_addr), 0, addr.size - 1)
    hit = (addr[at] == l_addr) & ((low[at] != l_pid) | (high[at] != l_pid))
    if not hit.any():
        return None
    where = ", ".join(f"{int(l_addr[i]):#x}" for i in np.flatnonzero(hit)[:RACE_EXAMPLES])
    return (f"a program reads a location another program of the same launch updates atomically (address {where}) "
            "without an order between them: programs run at once on a GPU, so what it reads depends on timing")


def _identity(op: str, data: Any, np: Any) -> Any:
    """Per element, whether an atomic ``op`` with operand ``data`` leaves the location as it was (a read)."""
    data = np.asarray(data)
    if op in ("ADD", "FADD", "OR", "XOR", "UMAX"):
        return data == 0
    if op in ("AND", "UMIN"):
        return data == (np.iinfo(data.dtype).max if data.dtype.kind == "u" else -1) if data.dtype.kind in "iu" \
            else np.zeros(data.shape, dtype=bool)
    if op == "MAX":
        return data == (-np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).min)
    if op == "MIN":
        return data == (np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).max)
    return np.zeros(data.shape, dtype=bool)


def install(report: dict) -> None:
    """Patch the interpreter's builder and grid executor (class level, idempotent)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as interp

    builder, executor = interp.InterpreterBuilder, interp.GridExecutor
    if getattr(builder, "_tritonrl_fidelity", False):
        report["fidelity"] = "ok (already installed)"
        return
    convert = interp._convert_float
    bf16, fp32 = tl.bfloat16, tl.float32
    log2e = float(np.array(LOG2E_BITS, dtype=np.uint32).view(np.float32))  # tl.exp's factor, as a GPU's
    from tritonrl.verify.child.ptx import faithful  # here: ptx reaches this module lazily too

    def values(handle: Any) -> Any:
        """A bf16 handle's values as float32 (other handles unchanged)."""
        if handle.dtype.scalar == bf16:
            return convert(handle.data, bf16, fp32, None).view(np.float32)
        return handle.data

    def to_bf16(data: Any) -> Any:
        return _bf16_bits(np.asarray(data, dtype=np.float32), np)

    original_binary, original_unary = builder.binary_op, builder.unary_op

    def canonical(handle: Any) -> Any:
        """``handle`` (an operation's result) with its NaNs the GPU's one (``canonical_nan``), where one may be."""
        if not (_NAN["made"] or _NAN["carried"]):
            return handle
        _NAN["made"] = False
        data = handle.data
        if getattr(data, "dtype", None) is None or data.dtype.kind != "f":
            return handle
        fixed = canonical_nan(data, np)
        return handle if fixed is data else interp.TensorHandle(fixed, handle.dtype.scalar)

    def binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar != bf16 and rhs.dtype.scalar != bf16:
            return canonical(original_binary(self, lhs, rhs, op))
        out = op(values(lhs), values(rhs))
        if out.dtype == np.bool_:  # a comparison: an int1 mask, as the GPU's
            return interp.TensorHandle(out, tl.int1)
        return interp.TensorHandle(to_bf16(out), lhs.dtype.scalar)

    def unary_op(self, arg, op):
        if arg.dtype.scalar != bf16:
            return canonical(original_unary(self, arg, op))
        return interp.TensorHandle(to_bf16(op(values(arg))), bf16)

    def create_fma(self, x, y, z):
        """float32 ``tl.fma`` rounded once (``fma_f32``; Triton 3.6's interpreter rounded twice, 3.9's once)."""
        if z.dtype.scalar != fp32:
            return canonical(original_fma(self, x, y, z))
        return interp.TensorHandle(fma_f32(*np.broadcast_arrays(x.data, y.data, z.data), np), fp32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        a_data, b_data = values(a), values(b)
        if a.dtype.scalar == interp.tl.float16:
            a_data, b_data = a_data.astype(np.float32), b_data.astype(np.float32)
        elif a.dtype.scalar == fp32 and (precision := str(input_precision).rsplit(".", 1)[-1].upper()) == "TF32":
            a_data, b_data = _tf32(a_data), _tf32(b_data)
        elif a.dtype.scalar == fp32 and precision in BF16_SPLITS:
            return interp.TensorHandle(_bf16_split_dot(a_data, b_data, BF16_SPLITS[precision], np) + d.data,
                                       d.dtype.scalar)
        elif a.dtype.primitive_bitwidth == 8 and a.dtype.is_floating():
            return original_dot(self, a, b, d, input_precision, max_num_imprecise_acc)
        return interp.TensorHandle(np.matmul(a_data, b_data, dtype=d.data.dtype) + d.data, d.dtype.scalar)

    def fp_to_int(self, src, dst_type):
        """A float cast to an integer as a GPU casts it. PTX's ``cvt.rzi`` goes toward zero, clamps to the type's
        range and takes NaN to 0; LLVM's NVPTX backend has no 8-bit registers, so a cast to an 8-bit integer is the
        16-bit cast's low byte (300.0 to int8: 300, then 44). numpy's cast of an out-of-range value is the CPU's
        (3e9 to int32 gives -2147483648 on x86, 70000 to int16 wraps to 4464): kernels told the interpreter from a
        GPU by it (the thirty-first red team's ``a04`` at 32 bits, the thirty-third's ``a08`` at 16 and ``a03`` at
        8). Measured on an H200 (``benchmarks/redteam/r33/tools/gpu_tells.py``): the 16-, 32-bit and unsigned rules
        hold; an out-of-range cast to int8 read straight back as a float gave 300 there (the value is not truncated
        in its 16-bit register), so 44 is what memory would hold: the conversion is undefined and the two differ."""
        kind = np.dtype(interp._get_np_dtype(dst_type))
        wide = np.dtype(f"{kind.kind}{max(kind.itemsize, 2)}")  # the type the cast clamps to
        data = np.asarray(values(src), dtype=np.float64)
        info = np.iinfo(wide)
        high, low, nan = data >= float(info.max), data <= float(info.min), np.isnan(data)
        inside = np.where(high | low | nan, 0.0, np.trunc(data)).astype(wide)
        out = np.where(high, info.max, np.where(low, info.min, inside)).astype(wide).astype(kind)
        return interp.TensorHandle(out, dst_type.scalar)

    def int_div(self, lhs, rhs):
        """Integer division as a GPU divides: by zero, every bit of the quotient set (-1 signed; on an H200 int32
        7 // 0 gave -1, where numpy gives 0 and a warning: the thirty-third red team's ``a05`` told the two apart;
        unsigned by the same bits, not measured). Other quotients are the interpreter's (toward zero)."""
        zero = rhs.data == 0
        if not np.any(zero):
            return original_idiv(self, lhs, rhs)
        safe = interp.TensorHandle(np.where(zero, np.ones_like(rhs.data), rhs.data), rhs.dtype.scalar)
        quotient = original_idiv(self, lhs, safe)
        ones = np.array(-1).astype(quotient.data.dtype) if quotient.data.dtype.kind == "i" \
            else np.array(np.iinfo(quotient.data.dtype).max, dtype=quotient.data.dtype)
        return interp.TensorHandle(np.where(zero, ones, quotient.data).astype(quotient.data.dtype),
                                   quotient.dtype.scalar)

    def cast_impl(self, src, dst_type):
        """float32 to bfloat16 rounds to nearest even, as a GPU's ``cvt.rn.bf16.f32``; Triton's interpreter truncated
        (the thirty-fourth red team: 1 + 2^-8 + 2^-9 is 1.0 truncated, 1.0078125 rounded)."""
        if src.dtype.scalar == fp32 and dst_type.scalar == bf16:
            return interp.TensorHandle(_bf16_bits(np.asarray(src.data, dtype=np.float32), np), bf16)
        return original_cast(self, src, dst_type)

    def fp_to_fp(self, src, dst_type, rounding_mode):
        """A float cast with ``fp_downcast_rounding`` as a GPU does it: float32 to bfloat16 to nearest even or
        toward zero (``cvt.rn``/``cvt.rz``; the interpreter's own rounding lost the carry of a tie), float32 to
        float16 toward zero without overflowing to infinity (``cvt.rz.f16.f32``: 1e6 is 65504; the interpreter
        gave inf), float32 to fp8 saturating at the largest finite value (``cvt.rn.satfinite.e5m2x2.f32`` and
        ``.e4m3x2``, what Triton 3.9 emits for sm_90: 70000 is 57344 in fp8e5, where the interpreter gave 65536;
        the thirty-fifth red team's ``a05``). Other casts are the interpreter's."""
        toward_zero = str(rounding_mode).rsplit(".", 1)[-1].upper() == "RTZ"
        if src.dtype.scalar == fp32 and dst_type.scalar in FP8_SATURATED:
            data = np.asarray(src.data, dtype=np.float32)
            top = np.float32(FP8_SATURATED[dst_type.scalar])
            src = interp.TensorHandle(np.where(np.isnan(data), data, np.clip(data, -top, top)).astype(np.float32),
                                      fp32)
        if src.dtype.scalar == fp32 and dst_type.scalar == bf16:
            return interp.TensorHandle(_bf16_bits(np.asarray(src.data, dtype=np.float32), np, toward_zero), bf16)
        if src.dtype.scalar == fp32 and dst_type.scalar == tl.float16 and toward_zero:
            return interp.TensorHandle(_fp16_toward_zero(np.asarray(src.data, dtype=np.float32), np), tl.float16)
        return original_fp_to_fp(self, src, dst_type, rounding_mode)

    def approximate(op, exact, *operands):
        """A float32 handle of an approximate instruction's result: ``exact`` (float64) rounded faithfully, by the
        operands' bits (``ptx.faithful``, as the same instruction in inline PTX), its NaNs the GPU's one."""
        return interp.TensorHandle(canonical_nan(faithful(exact, *operands, op=op), np), fp32)

    def flushed_input(arg, op, name):
        """``op`` of a float32 handle whose subnormal values are first flushed to a zero of their sign, rounded
        as the approximate instruction ``name`` (``approximate``)."""
        flushed = _flush_subnormals(np.asarray(arg.data, dtype=np.float32), np)
        with np.errstate(all="ignore"):
            return approximate(name, op(flushed.astype(np.float64)), flushed)

    def sqrt(self, arg):
        """float32 ``tl.sqrt`` is ``sqrt.approx.ftz.f32`` on sm_90 (what Triton emits, ``benchmarks/probes/
        ptx_lowering.py``): a subnormal input flushed to a zero of its sign ("subnormal inputs and results are
        flushed to sign-preserving zero": sqrt(1e-40) is 0 there, 1e-20 under numpy, the thirty-fifth red team's
        ``a03``), the result rounded faithfully (``approximate``: ``tl.sqrt(x) == tl.sqrt_rn(x)`` for every x was
        the CPU's alone). ``tl.sqrt_rn`` is ``sqrt.rn.f32``, which keeps subnormals and rounds to nearest: the
        interpreter's."""
        return flushed_input(arg, np.sqrt, "sqrt") if arg.dtype.scalar == fp32 else self.unary_op(arg, np.sqrt)

    def rsqrt(self, arg):
        """float32 ``tl.math.rsqrt`` likewise (``rsqrt.approx.ftz.f32`` on sm_90): rsqrt(1e-40) is inf there, 1e20
        under numpy."""
        if arg.dtype.scalar != fp32:
            return original_rsqrt(self, arg)
        return flushed_input(arg, lambda data: 1.0 / np.sqrt(data), "rsqrt")

    def exp2(self, arg):
        """float32 ``exp2`` is ``ex2.approx.ftz.f32``: a subnormal result flushed to zero (measured on an H200:
        exp2(-130) is 0 there, 7.3e-40 under numpy; ``benchmarks/redteam/r33/tools/gpu_tells.py``), the result
        rounded faithfully (``approximate``)."""
        if arg.dtype.scalar != fp32:
            return self.unary_op(arg, np.exp2)
        out = flushed_input(arg, np.exp2, "ex2")
        return interp.TensorHandle(_flush_subnormals(out.data, np), fp32)

    def exp(self, arg):
        """float32 ``tl.exp`` as a GPU computes it: ``mul.f32`` by log2(e) (``0f3FB8AA3B``), then
        ``ex2.approx.f32`` (no ``.ftz``; ``ptx_lowering.py``). numpy's ``exp`` was exact to the last bit, where
        the product's rounding alone moves a GPU's exp(80) by about a hundred units in the last place: a tell.
        The product is rounded to float32 here as there, the ``ex2`` rounded faithfully (``approximate``)."""
        if arg.dtype.scalar != fp32:
            return original_exp(self, arg)
        with np.errstate(all="ignore"):
            scaled = (np.asarray(arg.data, dtype=np.float64) * log2e).astype(np.float32)
            return approximate("ex2", np.exp2(scaled.astype(np.float64)), scaled)

    def fdiv(self, lhs, rhs):
        """float32 ``/`` is ``div.full.f32`` on sm_90 (``ptx_lowering.py``; the PTX ISA: at most 2 units in the last
        place, not IEEE's rounding), so its quotient is rounded faithfully (``approximate``): ``x / y ==
        tl.div_rn(x, y)`` for every pair was the CPU's alone. ``tl.div_rn`` (``div.rn.f32``) rounds to nearest:
        the interpreter's."""
        if lhs.dtype.scalar != fp32 or rhs.dtype.scalar != fp32:
            return original_fdiv(self, lhs, rhs)
        a, b = np.asarray(lhs.data, dtype=np.float32), np.asarray(rhs.data, dtype=np.float32)
        with np.errstate(all="ignore"):
            return approximate("div.full", a.astype(np.float64) / b.astype(np.float64), a, b)

    def create_reshape(self, arg, shape, allow_reorder):
        """``tl.reshape(..., can_reorder=True)`` (``tl.view``, a reduction over every axis) may hand the elements
        back in any order (Triton: "the order of the elements may not be preserved"); the interpreter kept it, so a
        kernel storing a viewed block in its logical order was right here and, where a GPU's layout reorders, wrong
        (the thirty-fifth red team's ``a17``). The order is a permutation drawn for the launch from its secret seed
        (``_Accesses.reorder``): the same for every program and every such reshape between two shapes, its inverse
        for the way back, so a kernel that reshapes values and their pointers alike, or reduces them, is right in
        any order, and one relying on an order (this one, or a GPU's) is not."""
        out = original_reshape(self, arg, shape, allow_reorder)
        source, target = tuple(np.shape(arg.data)), tuple(np.shape(out.data))
        if not allow_reorder or out.data.size <= 1 or source == target:
            return out
        order = _ACCESSES.reorder(source, target, out.data.size, np)
        return interp.TensorHandle(np.asarray(out.data).reshape(-1)[order].reshape(target), out.dtype.scalar)

    original_cvt = interp._implicit_cvt

    def implicit_cvt(arg):
        """A float kernel argument is a float32 scalar, as a GPU passes it (``fp32`` in the launch's signature);
        the interpreter kept a Python float, so arithmetic on arguments alone ran in float64 (the thirty-fourth red
        team's ``a13``: ``(s + 1e-9) - s`` is 0 on a GPU). Exactly ``float`` (and numpy's floats): a subclass's
        ``__float__`` is candidate code, read by the watch before the launch, not here."""
        if type(arg) is float or isinstance(arg, np.floating):
            return tl.tensor(interp.TensorHandle(np.array([arg], dtype=np.float32), fp32), fp32)
        return original_cvt(arg)

    interp._implicit_cvt = implicit_cvt
    interp.ReduceOps.generic_reduce = _tree_reduce(interp, tl, np)
    original_set_attr = interp.TensorHandle.set_attr

    def set_attr(self, key, values):
        _check_hint(self, key, values, np)
        return original_set_attr(self, key, values)

    original_reshape = builder.create_reshape
    builder.create_reshape = create_reshape
    original_cast, original_fp_to_fp = builder.cast_impl, builder.create_fp_to_fp
    builder.cast_impl, builder.create_exp2 = cast_impl, exp2
    original_exp, original_fdiv = builder.create_exp, builder.create_fdiv
    builder.create_exp, builder.create_fdiv = exp, fdiv
    builder.create_fp_to_fp = lambda self, *args: canonical(fp_to_fp(self, *args))
    original_rsqrt, original_fma = builder.create_rsqrt, builder.create_fma
    builder.create_sqrt, builder.create_rsqrt, builder.create_fma = sqrt, rsqrt, create_fma
    FP8_SATURATED.update({tl.float8e5: 57344.0, tl.float8e4nv: 448.0})  # the largest finite value of each
    interp.TensorHandle.set_attr = set_attr
    original_dot, original_idiv = builder.create_dot, builder.create_idiv
    original_init = builder.__init__

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        _gpu_dot_precisions(self)

    builder.__init__ = init
    _gpu_dot_precisions(getattr(interp, "interpreter_builder", None))  # the one made at Triton's import
    builder.binary_op, builder.unary_op = binary_op, unary_op
    builder.create_dot = lambda self, *args: canonical(create_dot(self, *args))
    original_to_tensor = interp.ReduceScanOpInterface.to_tensor

    def to_tensor(self, ret, dtype):
        """A reduction's or scan's result, its NaNs the GPU's one (a sum of inf and -inf is made there too)."""
        out = original_to_tensor(self, ret, dtype)
        fixed = canonical(out.handle)
        if fixed is not out.handle:
            out.handle = fixed
        return out

    interp.ReduceScanOpInterface.to_tensor = to_tensor
    original_bitcast = builder.create_bitcast

    def create_bitcast(self, src, dst_type):
        out = original_bitcast(self, src, dst_type)
        data = out.data
        if not _NAN["carried"] and getattr(data, "dtype", None) is not None and data.dtype.kind == "f" \
                and src.data.dtype.kind != "f" and np.isnan(data).any():
            _NAN["carried"] = True  # a NaN from integer bits: each later result is looked at
        elif not _NAN["carried"] and _reads_integers_as_floats(src.dtype, dst_type):
            # memory written as integers, to be loaded as floats (a NaN payload a GPU's next operation makes
            # canonical): each later result is looked at (checking every load instead cost 8% of a CPU verdict)
            _NAN["carried"] = True
        return out

    builder.create_bitcast = create_bitcast
    arm_nan_callback(np)
    builder.create_fp_to_si = builder.create_fp_to_ui = fp_to_int
    builder.create_idiv = int_div
    _install_programs(builder, executor, np)
    _install_typed_loops(interp, tl, np)
    _install_gpu_frontend(interp)
    builder._tritonrl_fidelity = True
    report["fidelity"] = ("ok: TF32 dot, bf16 values rounded to nearest even, saturating float-to-int casts, "
                          "integer division by zero, exp2's, sqrt's and rsqrt's flushed subnormals, exp through ex2, approximate "
                          "operations rounded faithfully, saturating fp8 casts, atomic "
                          "adds without subnormals, the GPU's canonical NaN, fma rounded once, float arguments in float32, "
                          "int32 loop variables, hints checked, reordering reshapes reordered, shuffled programs, "
                          "race check (atomics included)")


def _install_typed_loops(interp: Any, tl: Any, np: Any) -> None:
    """A kernel's ``for i in range(...)`` and ``tl.range(...)`` hand the body ``i`` as an int32 scalar (int64 where a
    bound is past int32), as a GPU's ``scf.for`` does; Triton's interpreter handed a Python int, so arithmetic on
    the loop variable alone ran as Python's (no int32 wrap, floor division, float64): the thirty-fourth red team's
    ``a10``-``a12`` told the two apart, and an honest ``i.to(tl.int64)`` failed (the thirty-third's ``h02``).
    ``tl.static_range`` keeps Python ints (constexprs on a GPU too). Done in the interpreter's own source rewrite:
    the loop's iterable is wrapped (``_TritonrlTypedLoop``, which the rewrite puts in the kernel's globals)."""
    import ast

    class TypedLoop:
        def __init__(self, iterable: Any) -> None:
            self.iterable = iterable

        def __iter__(self):
            loop = self.iterable
            if not isinstance(loop, range):
                yield from loop
                return
            wide = any(not -2**31 <= v < 2**31 for v in (loop.start, loop.stop, loop.step))
            kind, dtype = (tl.int64, np.int64) if wide else (tl.int32, np.int32)
            for value in loop:
                yield tl.tensor(interp.TensorHandle(np.array([value], dtype=dtype), kind), kind)

    def visit_For(self, node):
        node = self.generic_visit(node)
        call = node.iter
        if isinstance(call, ast.Call) and ((isinstance(call.func, ast.Name) and call.func.id == "range")
                                           or (isinstance(call.func, ast.Attribute) and call.func.attr == "range")):
            node.iter = ast.copy_location(ast.Call(func=ast.Name(id="_TritonrlTypedLoop", ctx=ast.Load()),
                                                   args=[call], keywords=[]), call)
        return node

    interp._TritonrlTypedLoop = TypedLoop  # the rewrite copies the interpreter's globals into a kernel's
    interp.ASTTransformer.visit_For = visit_For


def _tree_reduce(interp: Any, tl: Any, np: Any) -> Any:
    """``tl.reduce`` with a combine function of the kernel's own, as a tree: each round combines the first half of
    the axis with the second, all positions at once (log2(n) calls of the combine function on blocks). Triton's
    interpreter called it once an element in a Python loop, 0.11 s a row for a Welford layer norm over a 3-tuple:
    an honest kernel timed out (the thirty-fourth red team's ``h03``). A tree is also nearer a GPU's order (pairs
    of lanes, then of warps) than a running fold. Lower positions stay the left operand."""

    def generic_reduce(self, input):
        original_axis = self.axis
        input, axis = self.unravel(input, self.axis)
        shape = input[0].handle.data.shape
        dtypes = [arg.dtype for arg in input]
        arrays = [np.moveaxis(np.asarray(arg.handle.data), axis, -1) for arg in input]
        while arrays[0].shape[-1] > 1:
            n = arrays[0].shape[-1]
            half = n // 2
            left = [self.to_tensor(np.ascontiguousarray(a[..., :half]), d) for a, d in zip(arrays, dtypes)]
            right = [self.to_tensor(np.ascontiguousarray(a[..., half:2 * half]), d) for a, d in zip(arrays, dtypes)]
            out = self.combine_fn.fn(*left, *right)
            out = out if isinstance(out, tuple) else (out,)
            combined = [np.broadcast_to(np.asarray(o.handle.data if isinstance(o, tl.core.tensor) else o),
                                        left[0].handle.data.shape).astype(a.dtype) for o, a in zip(out, arrays)]
            arrays = [np.concatenate([c, a[..., 2 * half:]], axis=-1) for c, a in zip(combined, arrays)]
        ret = []
        for data, dtype in zip(arrays, dtypes):
            data = data[..., 0]
            if self.keep_dims:
                if original_axis is not None:
                    data = np.expand_dims(data, axis)
                else:
                    for _ in range(len(shape)):
                        data = np.expand_dims(data, 0)
            elif original_axis is None:
                data = data.item()
            ret.append(self.to_tensor(data, dtype))
        return ret

    return generic_reduce


def _bf16_bits(data: Any, np: Any, toward_zero: bool = False) -> Any:
    """float32 values as bfloat16 bits (uint16), rounded to nearest even (or toward zero); NaN stays NaN."""
    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    if toward_zero:
        rounded = bits >> 16
    else:
        rounded = (bits + (((bits >> 16) & 1) + 0x7FFF)) >> 16
    return np.where(np.isnan(data), np.uint32(CANONICAL_NAN_BITS[2]), rounded).astype(np.uint16)


# The one NaN a GPU's float instructions give, whatever NaN they make or pass on ("canonical NaN", PTX ISA): float32
# 0x7FFFFFFF, float16 and bfloat16 0x7FFF. numpy gives x86's: a NaN made is 0xFFC00000 (negative), one passed on
# keeps its bits. A kernel reading a NaN's bits (a bitcast, a store read back as integers) told the interpreter
# from a GPU by them (the thirty-seventh red team's ``a01`` in inline PTX, ``a09`` in plain Triton).
CANONICAL_NAN_BITS = {4: 0x7FFFFFFF, 2: 0x7FFF}
# Whether an operation's result may hold a NaN to make canonical: ``made`` is set by numpy's floating-point error
# callback when an operation makes a NaN (IEEE's "invalid": inf - inf, 0 * inf, 0 / 0, sqrt(-1); a NaN passed on
# raises nothing, and one this module made canonical stays so), and cleared by the next result looked at; ``carried``
# stays set once a bitcast has made a float NaN from integer bits, a pointer to integers was read as floats, or a
# launch was handed a float tensor holding a NaN (a payload a GPU's next operation would make canonical). So an operation costs one flag test, unless it made a NaN (its result is looked at) or a bitcast has
# made one from integer bits (every result after is looked at).
_NAN = {"made": False, "carried": False}


def note_nan_arguments(given: list) -> None:
    """A launch handed a float tensor holding a NaN (one the host made: an integer tensor viewed as floats keeps its
    payload, which a GPU's next operation makes canonical): each later result is looked at, as after a bitcast's
    NaN. One scan of each float tensor a launch is handed (``monitor.Monitor.launch``, the interpreter's launches),
    until the first NaN; reads past a tensor are the bounds check's."""
    if _NAN["carried"]:
        return
    import torch

    if any(t.is_floating_point() and bool(torch.isnan(t).any()) for t in given):
        _NAN["carried"] = True


def _invalid(kind: str, flag: int) -> None:
    """numpy's error callback (``seterr(invalid="call")``): an operation made a NaN."""
    _NAN["made"] = True


def arm_nan_callback(np: Any) -> None:
    """numpy calls ``_invalid`` when an operation makes a NaN (in this thread's error state)."""
    if np.geterrcall() is not _invalid:
        np.seterrcall(_invalid)
    if np.geterr()["invalid"] != "call":
        np.seterr(invalid="call")


def canonical_nan(data: Any, np: Any) -> Any:
    """``data`` with every NaN of a float16 or float32 array the canonical one (other arrays as they are)."""
    data = np.asarray(data)
    if data.dtype.kind != "f" or data.dtype.itemsize not in CANONICAL_NAN_BITS:
        return data
    nan = np.isnan(data)
    if not nan.any():
        return data
    bits = np.array(CANONICAL_NAN_BITS[data.dtype.itemsize], dtype=f"u{data.dtype.itemsize}").view(data.dtype)
    return np.where(nan, bits, data).astype(data.dtype)


def fma_f32(x: Any, y: Any, z: Any, np: Any) -> Any:
    """float32 ``x * y + z`` rounded once, as a GPU's ``fma.rn.f32``: the product is exact in float64, the sum is
    rounded to odd there (its rounding error, exact by Knuth's two-sum, sets the last bit when it is not zero), and
    rounding that to float32 is then the single rounding (53 >= 24 + 2 bits). Adding in float64 and rounding to
    float32 rounded twice, and a kernel could tell (the thirty-seventh red team's ``a03``, ``a07``: 1 + 2^-12 times
    itself plus 2^-70)."""
    x, y, z = (np.asarray(v, dtype=np.float64) for v in (x, y, z))
    with np.errstate(all="ignore"):
        product = x * y
        total = product + z
        virtual = total - product
        error = (product - (total - virtual)) + (z - virtual)
        even = (total.view(np.uint64) & np.uint64(1)) == 0
        odd = np.nextafter(total, np.where(error > 0, np.inf, -np.inf))
        total = np.where(np.isfinite(total) & (error != 0) & even, odd, total)
        return canonical_nan(total.astype(np.float32), np)


def _fp16_toward_zero(data: Any, np: Any) -> Any:
    """float32 values as float16 rounded toward zero: never past the largest finite value (65504)."""
    with np.errstate(over="ignore"):
        nearest = data.astype(np.float16)
    away = np.isfinite(data) & (np.abs(nearest.astype(np.float32)) > np.abs(data))
    return np.where(away, np.nextafter(nearest, np.float16(0)), nearest).astype(np.float16)


def _check_hint(handle: Any, key: str, values: Any, np: Any) -> None:
    """Stop the kernel at a ``tl.multiple_of`` (``tt.divisibility``) or ``tl.max_contiguous`` (``tt.contiguity``)
    hint on integers that the values do not bear out (``FalseHint``): on a scalar, the value is a multiple; on one
    dimension, each run of consecutive values starts at a multiple, and each aligned group of the claimed length
    is consecutive. On a pointer, ``tl.multiple_of`` claims the address's alignment in bytes (Triton's axis
    analysis reads it so, and vectorizes on it): each run of consecutive elements starts at a multiple (the thirty-
    fifth red team's ``a07``: ``tl.multiple_of(x_ptr + row * n_cols, 16)`` at an odd width), held as far as 64 bytes
    (``POINTER_ALIGNMENT``: a tensor made here starts at a multiple of 64, the arena's slots of 256, a GPU's
    allocations of 256 or more), so an honest claim of 128 on a base pointer is not refused here.
    ``tl.max_contiguous`` on pointers and wider tensors are not checked. Not
    relaxed for the lanes Triton's matmul idioms send back below the run (``offs % M``, ``tl.where(offs < M, offs,
    0)``): harmless where the kernel masks them at its store, but a kernel storing through them unmasked writes
    past the end on a GPU (``integrity/r35_relu_wrapped_offsets_hinted_unmasked_store``), and which lanes a store
    masks is not known here."""
    if key not in ("tt.divisibility", "tt.contiguity") or not HOLD_HINTS:
        return
    data = np.asarray(handle.data)
    pointer = handle.dtype.scalar.is_ptr()
    if data.dtype.kind not in "iu" or data.ndim > 1 or (pointer and key != "tt.divisibility"):
        return
    claim = int(values[0] if isinstance(values, (list, tuple)) else values)
    if claim <= 1:
        return
    wide = data.astype(np.int64).reshape(-1)
    hint = "tl.multiple_of" if key == "tt.divisibility" else "tl.max_contiguous"
    if pointer:  # held only as far as this machine's allocator aligns (a GPU's aligns to 256 bytes or more)
        claim = min(claim, POINTER_ALIGNMENT)
    if key == "tt.divisibility":
        step = max(1, handle.dtype.scalar.element_ty.primitive_bitwidth // 8) if pointer else 1
        starts = np.ones(wide.shape, dtype=bool)
        starts[1:] = wide[1:] != wide[:-1] + step
        bad = wide[starts][wide[starts] % claim != 0]
        if bad.size and pointer:
            raise FalseHint(f"a false {hint} hint on a pointer: an address {int(bad[0]) % claim} bytes past a "
                            f"multiple of {claim} (a GPU's compiler issues aligned vector loads and stores on the "
                            f"hint: a misaligned address there)")
        if bad.size:
            raise FalseHint(f"a false {hint} hint: {int(bad[0])} is not a multiple of {claim} (a GPU's compiler "
                            f"acts on the hint: the result there is undefined)")
    elif data.ndim == 1 and wide.size % claim == 0 and np.any(np.diff(wide.reshape(-1, claim), axis=1) != 1):
        raise FalseHint(f"a false {hint} hint: the values are not consecutive in groups of {claim} (a GPU's "
                        f"compiler acts on the hint: the result there is undefined)")



def _install_gpu_frontend(interp: Any) -> None:
    """Every launch's kernel through the GPU front end first (``frontend.frontend_problem``), at the interpreter's
    lowest launch point: ``GridExecutor.__call__`` runs the programs, whoever made the executor (a launch through
    ``kernel[grid]``, the autotuner, or candidate code building a ``GridExecutor`` itself); the function checked is
    the one it runs. A jit helper's call undoes its own patches of ``triton.language`` when it returns (Triton's
    leaves them in place)."""
    from tritonrl.verify.child.frontend import NOT_IN_THIS_TRITON, frontend_problem
    from tritonrl.verify.child.interpreter import InterpreterUnsupported

    executor, functions = interp.GridExecutor, interp.InterpretedFunction
    original_call = executor.__call__

    def __call__(self, *args, **kwargs):  # noqa: N807 - Triton's name
        problem = frontend_problem(self.fn, args, kwargs)
        if problem is not None and problem.startswith(NOT_IN_THIS_TRITON):  # this machine's Triton, not the kernel
            raise InterpreterUnsupported(f"kernel `{getattr(self.fn, '__name__', '?')}`", problem)
        if problem is not None:
            raise InterpreterOnly(f"kernel `{getattr(self.fn, '__name__', '?')}` is rejected by the GPU compiler: "
                                  f"{problem}")
        return original_call(self, *args, **kwargs)

    def device_call(self, *args, **kwargs):
        scope = interp._patch_lang(self.fn)
        try:
            return self.rewrite()(*args, **kwargs)
        except Exception as exc:
            raise interp.InterpreterError(repr(exc)) from exc
        finally:
            scope.restore()

    executor.__call__ = __call__
    if hasattr(interp, "_LangPatchScope"):  # a Triton whose patches can be undone
        functions.__call__ = device_call
    rewriter = getattr(interp, "FunctionRewriter", None)
    if rewriter is not None and hasattr(rewriter, "_find_def"):
        rewriter._find_def = _first_def


_JIT_DEF = re.compile(r"^def\s+\w+\s*\(", re.MULTILINE)  # where ``JITFunction`` starts a kernel's source


def _first_def(self: Any, lines: list[str]) -> int:
    """The line (from 1) where the interpreter starts the kernel's source: where ``JITFunction`` does, and so the
    front end (the first ``def`` at the source's own indentation). Triton's rewriter took the *last* line starting
    with ``def``: the twenty-sixth red team put a second ``def`` of the kernel in its docstring, with numpy in its
    body, and the interpreter ran that while the front end compiled the visible body."""
    src = textwrap.dedent("".join(lines))
    found = _JIT_DEF.search(src)
    return src.count("\n", 0, found.start()) + 1 if found else 1


_DISCARDED: dict[tuple[str, int], bool] = {}
_ATOMIC_LINES: dict[str, tuple[set[int], set[int]]] = {}


def result_discarded() -> bool:
    """Whether the atomic being built is a statement of its own (``tl.atomic_add(p, v)``: its old value dropped),
    read from the kernel's source at the line the nearest kernel frame is on; unknown counts as used."""
    frame = _getframe(2)
    while frame is not None:
        key = (frame.f_code.co_filename, frame.f_lineno)
        if key in _DISCARDED:
            return _DISCARDED[key]
        discarded, used = _atomic_lines(key[0])
        if key[1] in discarded or key[1] in used:
            _DISCARDED[key] = key[1] in discarded and key[1] not in used
            return _DISCARDED[key]
        frame = frame.f_back
    return False


def _atomic_lines(filename: str) -> tuple[set[int], set[int]]:
    """(lines of ``tl.atomic_*`` calls that are whole statements, lines of those whose result is used) in a file;
    nothing for Triton's, torch's and the verifier's own files."""
    import ast

    if filename in _ATOMIC_LINES:
        return _ATOMIC_LINES[filename]
    found: tuple[set[int], set[int]] = (set(), set())
    if filename.endswith(".py") and not any(part in filename for part in _OWN_CODE):
        try:
            with open(filename, encoding="utf-8") as fh:
                tree = ast.parse(fh.read())
        except (OSError, SyntaxError, ValueError):
            tree = None
        nodes = list(ast.walk(tree)) if tree is not None else []
        statements = {id(n.value) for n in nodes if isinstance(n, ast.Expr)}
        for node in (n for n in nodes if _is_atomic(n)):
            lines = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            found[0 if id(node) in statements else 1].update(lines)
    _ATOMIC_LINES[filename] = found
    return found


_OWN_CODE = ("/triton/", "/torch/", "/tritonrl/verify/")


def _is_atomic(node: Any) -> bool:
    import ast

    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("atomic_")


BF16_SPLITS = {"BF16X3": 2, "BF16X6": 3}  # an fp32 operand as this many bf16 parts


def _bf16_split_dot(a: Any, b: Any, parts: int, np: Any) -> Any:
    """``a @ b`` as a GPU's ``bf16x3`` (2 parts) or ``bf16x6`` (3) computes it: each fp32 operand split into bf16
    parts (each the rounding of what the earlier ones leave), and only the products of parts whose indices sum to
    less than ``parts`` (hi*hi, hi*lo, lo*hi for bf16x3), smallest first, in fp32. What the parts cannot hold is lost,
    as on the GPU: taken as fp32 products, a dot of constants told the interpreter from a GPU."""
    def split(x):
        out, rest = [], np.ascontiguousarray(x, dtype=np.float32)
        for _ in range(parts):
            part = (_bf16_bits(rest, np).astype(np.uint32) << 16).view(np.float32)
            out.append(part)
            rest = (rest - part).astype(np.float32)
        return out
    a_parts, b_parts = split(a), split(b)
    pairs = sorted(((i, j) for i in range(parts) for j in range(parts) if i + j < parts), key=lambda ij: -sum(ij))
    total = None
    for i, j in pairs:
        term = np.matmul(a_parts[i], b_parts[j], dtype=np.float32)
        total = term if total is None else (total + term).astype(np.float32)
    return total


def _tf32(data: Any) -> Any:
    """fp32 values rounded to TF32 (10 mantissa bits, to nearest): what a tensor core multiplies."""
    import numpy as np

    bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _lanes_disagree(addresses: Any, bits: Any, np: Any) -> int | None:
    """An address that lanes of one store write different values to (the interpreter applies them in lane order,
    so the last lane's value always lands: the thirty-first red team's ``a03``, every row of a tile storing to one
    place), else None. Lanes writing one value to one place (a broadcast scalar) agree."""
    if addresses.size < 2 or bool(np.all(addresses[1:] > addresses[:-1])):  # ascending, as most stores are
        return None
    order = np.argsort(addresses, kind="stable")
    a, b = addresses[order], bits[order]
    clash = (a[1:] == a[:-1]) & (b[1:] != b[:-1])
    return int(a[1:][clash][0]) if clash.any() else None


def _bits(data: Any, np: Any) -> Any:
    """Each element's bytes as one uint64 (zero-padded): values of any dtype compared as bit patterns."""
    if not len(data):
        return np.zeros(0, dtype=np.uint64)
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(len(data), -1)
    padded = np.zeros((len(data), 8), dtype=np.uint8)
    padded[:, : min(8, raw.shape[1])] = raw[:, :8]
    return padded.view(np.uint64).reshape(-1)


def _lanes_in_any_order(rmw: Any, builder: Any, rmw_op: Any, op: str, ptr: Any, val: Any, mask: Any, where: Any,
                        updated: Any, rest: tuple, kwargs: dict) -> Any:
    """One atomic read-modify-write of a block, its lanes served in an order drawn for the call when two of them
    update one address. The interpreter serves them in lane order; a GPU's threads reach one address in no order
    the kernel can know, so what each lane gets back (a ticket from a counter, the value an exchange replaced) is
    not the lane's to rely on (the thirty-third red team's ``a07``, ``a10``). A float exchange goes through the
    integer of its width (the same bits; the interpreter exchanges no floats, a GPU does: ``atom.exch.b32``); its
    old values come back as they were, whatever the kernel does with them."""
    import numpy as np
    import triton.language as tl

    value = np.broadcast_to(np.asarray(val.data), np.shape(ptr.data))
    ints = {4: (np.int32, tl.int32), 8: (np.int64, tl.int64)}.get(value.dtype.itemsize)
    as_int = op == "XCHG" and value.dtype.kind == "f" and ints is not None
    shared = updated.size > 1 and np.unique(updated).size < updated.size
    if not (shared or as_int):  # one lane an address, no float exchange: the interpreter's own call
        return rmw(builder, rmw_op, ptr, val, mask, *rest, **kwargs)
    if as_int:
        value = value.view(ints[0])
    order = np.arange(value.size)
    if shared:
        order = np.random.default_rng(secrets.randbits(64)).permutation(value.size)

    def lanes(data: Any) -> Any:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(data), value.shape).reshape(-1)[order]).reshape(
            value.shape)

    handle = type(val)
    result = rmw(builder, rmw_op, handle(lanes(ptr.data), ptr.dtype),
                 handle(lanes(value), ints[1] if as_int else val.dtype), handle(lanes(where), mask.dtype),
                 *rest, **kwargs)
    back = np.empty_like(np.asarray(result.data).reshape(-1))
    back[order] = np.asarray(result.data).reshape(-1)
    back = back.reshape(value.shape)
    return handle(back.view(np.asarray(val.data).dtype) if as_int else back, val.dtype.scalar)


def _flush_subnormals(data: Any, np: Any) -> Any:
    """float32 values with each subnormal made a zero of its sign (a GPU's ``.ftz``)."""
    data = np.asarray(data, dtype=np.float32)
    return np.where(np.abs(data) < np.finfo(np.float32).tiny, np.copysign(np.float32(0), data), data).astype(np.float32)


def _flushed_add(add: Callable[[Any], Any], ptr: Any, val: Any, where: Any, np: Any) -> Any:
    """A float32 atomic add as a GPU's: "atom.add.f32 rounds to nearest even and flushes subnormal inputs and
    results to sign-preserving zero" (the PTX ISA; ``RED.E.ADD.F32.FTZ.RN`` in the SASS of sm_86 and sm_89; adding
    1e-40 to 0 leaves 0 on a GPU, NVIDIA's forum, 2013). The interpreter kept subnormals: a kernel adding one told it
    from a GPU (the thirty-fifth red team's ``a09``). The addend is flushed before the add; the old values the add
    returns show whether memory held a subnormal or a sum is one, and only then (no honest input has one) is memory
    written again with the sum a GPU leaves: the lane's flushed old value plus its addend, flushed (on an address
    several lanes add to, the last lane's). What each lane gets back is the interpreter's."""
    from triton.runtime import interpreter as interp

    addend = _flush_subnormals(val.data, np)
    result = add(type(val)(addend, val.dtype))
    old = np.broadcast_to(np.asarray(result.data, dtype=np.float32), where.shape)
    summed = old + np.broadcast_to(addend, where.shape)
    tiny = np.finfo(np.float32).tiny
    wrong = where & (((old != 0) & (np.abs(old) < tiny)) | ((summed != 0) & (np.abs(summed) < tiny)))
    def store(values: Any, lanes: Any) -> None:  # Triton 3.6's store takes writeable arrays only (no broadcast views)
        interp._interpreter.store(np.array(np.broadcast_to(np.asarray(ptr.data), where.shape)),
                                  np.array(values, dtype=np.float32), np.array(lanes))

    if wrong.any():
        store(_flush_subnormals(_flush_subnormals(old, np) + np.broadcast_to(addend, where.shape), np), wrong)
    made = where & np.isnan(summed)  # inf + -inf, or a NaN memory held: the GPU's add leaves its one NaN there
    if made.any():
        store(canonical_nan(np.broadcast_to(summed, where.shape), np), made)
    return result


def _reads_integers_as_floats(src: Any, dst: Any) -> bool:
    """Whether a bitcast turns a pointer to integers into a pointer to floats."""
    try:
        return bool(src.is_ptr() and dst.is_ptr() and not src.element_ty.is_floating()
                    and dst.element_ty.is_floating())
    except AttributeError:  # not Triton types (a block of values): not a pointer cast
        return False


def _width(value: Any) -> int:
    """The bytes of an atomic's operand (its element type's)."""
    return max(1, int(getattr(value.dtype.scalar, "primitive_bitwidth", 32)) // 8)


def _sem_scope(rest: tuple, kwargs: dict) -> tuple[Any, Any]:
    """An atomic's ``sem`` and ``scope`` as the builder got them (after the leading operands, or by name)."""
    return kwargs.get("sem", rest[0] if rest else None), kwargs.get("scope", rest[1] if len(rest) > 1 else None)


def _install_programs(builder: Any, executor: Any, np: Any) -> None:
    """Shuffled program order (``set_grid_dim``/``set_grid_idx``), recorded accesses, the race check at the end."""
    import triton.language as tl

    original_dim, original_idx = builder.set_grid_dim, builder.set_grid_idx
    original_load, original_store = builder.create_masked_load, builder.create_masked_store
    original_restore = executor._restore_args_dev
    original_rmw, original_cas = builder.create_atomic_rmw, builder.create_atomic_cas
    original_barrier = builder.create_barrier


    def set_grid_dim(self, nx, ny, nz):
        _ACCESSES.start((nx, ny, nz), seed=secrets.randbits(64))  # an order the kernel's author cannot predict
        arm_nan_callback(np)  # at each launch: a candidate's np.seterr or np.errstate around it undoes nothing
        return original_dim(self, nx, ny, nz)

    def set_grid_idx(self, x, y, z):
        return original_idx(self, *_ACCESSES.program_index(x, y, z))

    # The leading parameters are taken by position and the rest passed on as they came: triton's builder methods
    # differ in their trailing ones between versions (3.6: cache_modifier, eviction_policy; 3.9: cache_policy).
    def create_masked_load(self, ptrs, mask, *rest, **kwargs):
        where = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data))
        loaded = np.asarray(ptrs.data)[where]
        _ACCESSES.load(_ACCESSES.actor(), loaded)
        if _ACCESSES.lanes.stored and _ACCESSES.intra is None:
            raced = _ACCESSES.lanes.foreign_read(where.size, loaded, np.flatnonzero(where), np)
            if raced.size:
                _ACCESSES.intra = (
                    f"a program loads what another lane of it stored or updated atomically (address "
                    f"{', '.join(f'{int(a):#x}' for a in raced[:RACE_EXAMPLES])}) with no tl.debug_barrier() between: "
                    "on a GPU a program's lanes are threads that run at once, so what it reads depends on timing")
        if _LOAD_WATCH is not None:
            _LOAD_WATCH.append(loaded)
        result = original_load(self, ptrs, mask, *rest, **kwargs)
        if where.size > 1:  # what each lane read, for a later store by another lane over it (``foreign_write``)
            _ACCESSES.lanes.load(where.size, loaded, where, result.data)
        return result

    def create_masked_store(self, ptrs, value, mask, *rest, **kwargs):
        where = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data))
        data = np.broadcast_to(np.asarray(value.data), where.shape)[where]
        stored = np.asarray(ptrs.data)[where]
        bits = _bits(data, np)
        _ACCESSES.store(_ACCESSES.actor(), stored, bits, scalar=where.size == 1)
        lanes = np.flatnonzero(where)
        if _ACCESSES.intra is None:
            clash = _lanes_disagree(stored, bits, np)
            if clash is not None:
                _ACCESSES.intra = (
                    f"lanes of one store write different values to one address ({clash:#x}): on a GPU they are "
                    "threads storing at once, and which value lands is not specified")
            elif _ACCESSES.lanes.stored or _ACCESSES.lanes.read:
                raced = _ACCESSES.lanes.foreign_write(where.size, stored, lanes, bits, np)
                if raced.size:
                    _ACCESSES.intra = (
                        f"a program stores where another lane of it wrote or read another value (address "
                        f"{', '.join(f'{int(a):#x}' for a in raced[:RACE_EXAMPLES])}) with no tl.debug_barrier() "
                        "between: on a GPU the two lanes are threads that run at once, so which value lands depends "
                        "on timing")
        _ACCESSES.lanes.store(where.size, stored, lanes, bits)
        return original_store(self, ptrs, value, mask, *rest, **kwargs)

    def create_barrier(self, *args, **kwargs):
        _ACCESSES.lanes = _Lanes()  # the program's lanes wait for each other: its stores are seen by all after
        _ACCESSES.barrier()
        return original_barrier(self, *args, **kwargs)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, *rest, **kwargs):
        where = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptr.data))
        addresses = np.asarray(ptr.data)
        op = str(rmwOp).rsplit(".", 1)[-1]
        read = np.broadcast_to(_identity(op, val.data, np), where.shape)
        actor = _ACCESSES.actor()
        used = not result_discarded()
        if used:  # an atomic whose result the kernel drops reads nothing
            _ACCESSES.load(actor, addresses[where & read])
        if _LOAD_WATCH is not None:  # an atomic reads its location to combine with it (an atomic max over -inf)
            _LOAD_WATCH.append(addresses[where])
        _ACCESSES.updates.append((actor, addresses[where & ~read]))
        updated, lanes = addresses[where], np.flatnonzero(where)
        _ACCESSES.fence(actor, updated, *_sem_scope(rest, kwargs), _width(val), used, scalar=where.size == 1)
        if where.size > 1 and _ACCESSES.intra is None:
            raced = _ACCESSES.lanes.stored_under(where.size, updated, lanes, np)
            if raced.size:
                _ACCESSES.intra = (
                    f"a program updates atomically where another lane of it stored (address "
                    f"{', '.join(f'{int(a):#x}' for a in raced[:RACE_EXAMPLES])}) with no tl.debug_barrier() between: "
                    "on a GPU the update may land before the store, which then overwrites it")
        _ACCESSES.lanes.store(where.size, updated, lanes)  # its result: no lane's to read
        if op == "XCHG":  # an exchange is a store: programs exchanging different values race like stores do
            data = np.broadcast_to(np.asarray(val.data), where.shape)[where]
            _ACCESSES.store(actor, addresses[where], _bits(data, np), scalar=where.size == 1)
            if addresses.size == 1 and where.all():  # giving a lock back
                _ACCESSES.locks.discard(int(addresses.reshape(-1)[0]))
        if op == "FADD" and val.dtype.scalar == tl.float32:
            return _flushed_add(lambda v: _lanes_in_any_order(original_rmw, self, rmwOp, op, ptr, v, mask, where,
                                                              updated, rest, kwargs), ptr, val, where, np)
        return _lanes_in_any_order(original_rmw, self, rmwOp, op, ptr, val, mask, where, updated, rest, kwargs)

    def create_atomic_cas(self, ptr, cmp, val, *rest, **kwargs):
        addresses = np.asarray(ptr.data).reshape(-1)
        _ACCESSES.updates.append((_ACCESSES.actor(), addresses))
        _ACCESSES.fence(_ACCESSES.actor(), addresses, *_sem_scope(rest, kwargs), _width(val), True,
                        scalar=addresses.size == 1)
        if _LOAD_WATCH is not None:
            _LOAD_WATCH.append(addresses)
        result = original_cas(self, ptr, cmp, val, *rest, **kwargs)
        expected, new, found = (np.asarray(h.data).reshape(-1) for h in (cmp, val, result))
        if addresses.size == 1 and found[0] == expected[0] and new[0] != expected[0]:  # a lock taken
            _ACCESSES.locks.add(int(addresses[0]))
        return result

    def restore_args_dev(self, *args, **kwargs):
        race = _ACCESSES.intra or find_race(_ACCESSES.loads, _ACCESSES.stores, _ACCESSES.updates, _ACCESSES)
        _ACCESSES.clear()
        if race is not None:
            raise DataRace(race)
        return original_restore(self, *args, **kwargs)

    builder.set_grid_dim, builder.set_grid_idx = set_grid_dim, set_grid_idx
    builder.create_atomic_rmw, builder.create_atomic_cas = create_atomic_rmw, create_atomic_cas
    builder.create_masked_load, builder.create_masked_store = create_masked_load, create_masked_store
    builder.create_barrier = create_barrier
    executor._restore_args_dev = restore_args_dev
