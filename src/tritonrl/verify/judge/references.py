"""References, in the judge's memory on its device: each trial's inputs and the reference ``Model``'s outputs.

    store = ReferenceStore("cuda", randomize=True, max_bytes=8 << 30, salt=secret)
    refs = store.get(trials)                 # {trial name: Reference}; computed once per (task, trial)
    ref = store.fresh(trial, k)              # new inputs (a seed the candidate cannot know) and their outputs

A reference is computed here, from the task's trusted source, and never leaves the judge: the candidate's child
is handed a call's inputs (through the arena) just before that call and nothing else. Input values come from
seeds mixed with the judge's secret ``salt`` (``input_seed``), so no candidate can make them itself; the seeds
that build the models are not secret (both sides build the same weights from them). References are held with a
bound, least recently used first out; none is written to disk: on the device a reference is recomputed faster
than it is read back (docs/verifier.md). A task whose reference fails raises ``TaskError`` naming the trial.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import types
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch

from tritonrl.errors import TaskError
from tritonrl.verify.judge.compare import ReferenceSide, reference_side
from tritonrl.verify.shared.trial import (
    TrialSpec,
    as_tuple,
    build_model,
    exact_fp32,
    load_task_module,
    make_inputs,
    state_digests,
)

_RNG = threading.Lock()  # torch's global generators are seeded per reference: one at a time in this process
# The share of the device's memory a judge leaves free for the candidates' children (other processes: they cannot
# use what this process's allocator keeps). Five judges on one H100 (benchmarks/bundled_gpu.py's repeats), each
# keeping what its references and timed inputs had used, left 130 MiB free by the eighth task: its children failed
# with "CUDA out of memory".
FREE_FLOOR = 0.25


def device_free_share(device: str, floor: float) -> float | None:
    """The share of ``device``'s memory free now (None off a GPU); below ``floor``, measured again after this
    process's allocator gave its unused blocks back (it keeps them otherwise: the next allocations are cheaper)."""
    if not device.startswith("cuda"):
        return None
    free, total = torch.cuda.mem_get_info(device)
    if free / total < floor:
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info(device)
    return free / total


@dataclass
class Reference:
    """One trial, on the judge's device: what the candidate is given and what it must return."""

    trial: TrialSpec
    init_args: list        # ModelNew's constructor arguments (Python values; tensors are rare)
    inputs: list           # the forward's arguments as handed to the candidate (tensors and Python values)
    inputs_after: list     # the inputs as the reference's forward left them (itself, unless Model mutates them)
    outputs: list          # the reference's output tensors
    nbytes: int
    sides: list[ReferenceSide | None]  # what each comparison needs of each floating output alone (compare.py)
    state: list[str] = field(default_factory=list)  # digests of the model's buffers: the task's own state

    @property
    def devices(self) -> list[str]:
        return [o.device.type for o in self.outputs]


def input_seed(salt: str, trial: TrialSpec, call: int | str | None = None) -> int:
    """The seed of a trial's inputs (``call``: of a timed call's fresh inputs): secret through ``salt``."""
    text = repr((salt, trial.task_key, trial.seed, trial.input_seed, trial.scale, trial.dtype, call))
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


class ReferenceStore:
    """References by trial (LRU by bytes); computed under a per-task lock so concurrent sessions share them."""

    def __init__(self, device: str, randomize: bool, max_bytes: int, salt: str,
                 free_share=device_free_share) -> None:
        self.device, self.randomize, self.max_bytes, self.salt = device, randomize, max_bytes, salt
        self.free_share = free_share  # (device, floor) -> the device's free share, or None (a test passes its own)
        self._memory: OrderedDict[str, Reference] = OrderedDict()
        self._bytes = 0
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._modules: dict[str, types.ModuleType] = {}
        self.stats = {"computed": 0, "memory_hits": 0, "evicted": 0, "yielded": 0}
        exact_fp32()

    def key(self, trial: TrialSpec) -> str:
        return trial.cache_key(self.device, self.randomize)

    def get(self, trials: list[TrialSpec]) -> dict[str, Reference]:
        """Every trial's reference by trial name; raises ``TaskError`` naming the trial and cause on failure."""
        with self._guard:
            lock = self._locks.setdefault(trials[0].task_key, threading.Lock())
        found: dict[str, Reference] = {}
        with lock:
            for trial in trials:
                ref = self._lookup(trial)
                if ref is None:
                    ref = self.compute(trial, input_seed(self.salt, trial))
                    self._remember(trial, ref)
                    self.stats["computed"] += 1
                found[trial.name] = ref
        return found

    def held(self, trials: list[TrialSpec]) -> dict[str, Reference] | None:
        """Every trial's reference by trial name if all are in memory (no GPU work: no lease needed), else None."""
        with self._guard:
            if not all(self.key(trial) in self._memory for trial in trials):
                return None
        found: dict[str, Reference] = {}
        for trial in trials:
            ref = self._lookup(trial)
            if ref is None:  # evicted meanwhile
                return None
            found[trial.name] = ref
        return found

    def fresh(self, trial: TrialSpec, call: int | str, model: torch.nn.Module | None = None,
              state: bool = False) -> Reference:
        """Inputs for one timed call (or a trial's retry, ``state``: with its buffers' digests), never handed out
        before, and the reference's outputs for them."""
        return self.compute(trial, input_seed(self.salt, trial, call), model=model, state=state)

    def module(self, trial: TrialSpec) -> types.ModuleType:
        digest = hashlib.sha256(trial.source.encode()).hexdigest()
        with self._guard:
            module = self._modules.get(digest)
        if module is None:
            try:
                module = load_task_module(trial.source)
            except Exception as exc:  # noqa: BLE001 - the task's fault, reported with its trial
                raise TaskError(f"task {trial.task_key} does not load: {type(exc).__name__}: {exc}") from exc
            with self._guard:
                self._modules[digest] = module
        return module

    def shapes(self, trial: TrialSpec) -> tuple[list, list]:
        """The constructor's arguments and the inputs of ``trial`` on the meta device (shapes and dtypes, no values,
        no memory): the probe at the GPU's shape (``Session.gpu_shape``). Raises ``TaskError`` when they cannot
        be made there."""
        module = self.module(trial)
        try:
            with torch.random.fork_rng(devices=[]):
                return make_inputs(module, trial, "meta")
        except Exception as exc:  # noqa: BLE001 - the task's inputs, not the candidate: reported as unchecked
            raise TaskError(f"task {trial.task_key}'s inputs on the meta device: {type(exc).__name__}: {exc}") from exc

    def model(self, trial: TrialSpec) -> torch.nn.Module:
        """The reference ``Model`` of this trial, built as the candidate's is (seed, perturbation, dtype)."""
        module = self.module(trial)
        with _RNG:
            init_args, _ = make_inputs(module, trial, "cpu", inputs=False)
            return build_model(module.Model, init_args, trial.seed, self.randomize, self.device, trial.dtype)

    def compute(self, trial: TrialSpec, seed: int, model: torch.nn.Module | None = None,
                state: bool = True) -> Reference:
        """One trial's reference; ``state``: with the digests of the model's buffers (the build message's)."""
        try:
            with _RNG:
                return self._compute(trial, seed, model, state)
        except TaskError:
            raise
        except Exception as exc:  # noqa: BLE001 - the task's failure, with its trial
            raise TaskError(f"the reference Model failed on task {trial.task_key}, trial {trial.name}: "
                            f"{type(exc).__name__}: {exc}"[:600]) from exc

    def _compute(self, trial: TrialSpec, seed: int, model: torch.nn.Module | None, state: bool) -> Reference:
        module = self.module(trial)
        spec = dataclasses.replace(trial, input_seed=seed)
        init_args, _ = make_inputs(module, spec, self.device, inputs=False)
        if model is None:
            model = build_model(module.Model, init_args, trial.seed, self.randomize, self.device, trial.dtype)
        # Outside the task's domain (exp of large values, log of tiny ones, a loss over probabilities) the reference
        # itself fails, so a moved trial keeps what it can: the shift without the spread, then its plain scale (an
        # honest kernel must match a finite reference). Where moved values come out unchanged (a hard shrink or a
        # wide clamp of shifted values; hardtanh of the x0.01 trial's), the trial would ask for a copy of an input,
        # which a kernel rewriting a clone in place cannot show it made (no byte changes; on a GPU no store is seen
        # either): it keeps its plain values too.
        attempts = _moves(spec)
        final = len(attempts) - 1  # the last for a domain's sake; a plain one after it only for an echo
        if spec.scale != 1.0:
            attempts.append(dataclasses.replace(spec, scale=1.0, spread=1.0, shift=0.0))
        for k, spec in enumerate(attempts):
            _, inputs = make_inputs(module, spec, self.device)
            kept = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            try:
                with torch.no_grad():
                    outputs = as_tuple(model(*inputs))
            except Exception:  # noqa: BLE001 - a moved trial outside the task's domain: the next attempt
                if k >= final:
                    raise
                continue
            echo = _moved(spec) and _echoes(outputs, kept)
            if k == len(attempts) - 1 or (not echo and (k >= final or _finite(outputs))):
                break
        for i, out in enumerate(outputs):
            if type(out) is not torch.Tensor:
                raise TaskError(f"task {trial.task_key}: the reference's output {i} is a {type(out).__name__}, "
                                "not a tensor")
        outputs = [o.detach().contiguous() for o in outputs]
        mutated = any(isinstance(x, torch.Tensor) and not _same(x, k) for x, k in zip(inputs, kept))
        handed = kept if mutated else inputs  # the candidate gets the inputs as they were before the forward
        after = inputs                        # and must leave them as the reference's forward did
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
        nbytes = sum(_nbytes(t) for t in [*outputs, *handed, *(after if mutated else [])])
        sides = [reference_side(o) if o.is_floating_point() else None for o in outputs]
        return Reference(trial, list(init_args), list(handed), list(after), outputs, nbytes, sides,
                         state_digests(model) if state else [])

    def release_cache(self) -> None:
        """This process's unused blocks back to the device (under the exclusive lease: ``empty_cache`` waits for the
        device)."""
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def yield_memory(self, floor: float = FREE_FLOOR) -> int:
        """Memory back to the device for the candidates' children: this process's unused blocks, then references,
        least recently used first, while less than ``floor`` of the device is free. Returns how many went; call it
        where no timing run is under way (``empty_cache`` waits for the device)."""
        share = self.free_share(self.device, floor)
        gone = 0
        while share is not None and share < floor:
            with self._guard:
                if not self._memory:
                    break
                _, old = self._memory.popitem(last=False)
                self._bytes -= old.nbytes
            del old
            gone += 1
            share = self.free_share(self.device, floor)
        self.stats["yielded"] += gone
        return gone

    def _lookup(self, trial: TrialSpec) -> Reference | None:
        key = self.key(trial)
        with self._guard:
            ref = self._memory.get(key)
            if ref is not None:
                self._memory.move_to_end(key)
                self.stats["memory_hits"] += 1
            return ref

    def _remember(self, trial: TrialSpec, ref: Reference) -> None:
        key = self.key(trial)
        with self._guard:
            if key in self._memory:
                return
            self._memory[key] = ref
            self._bytes += ref.nbytes
            while self._bytes > self.max_bytes and len(self._memory) > 1:
                _, old = self._memory.popitem(last=False)
                self._bytes -= old.nbytes
                self.stats["evicted"] += 1


def _moved(spec: TrialSpec) -> bool:
    """Whether a trial's values are moved from plain ``randn`` (scaled, spread or shifted)."""
    return spec.scale != 1.0 or spec.spread != 1.0 or bool(spec.shift)


def _moves(spec: TrialSpec) -> list[TrialSpec]:
    """``spec``, then the same without its spread (when it also shifts), then without either: what a moved trial
    falls back to outside the task's domain."""
    attempts = [spec]
    if spec.spread != 1.0 and spec.shift:
        attempts.append(dataclasses.replace(spec, spread=1.0))
    if spec.spread != 1.0 or spec.shift:
        attempts.append(dataclasses.replace(spec, spread=1.0, shift=0.0))
    return attempts


def _echoes(outputs: tuple, inputs: list) -> bool:
    """Whether an output is one of the inputs, value for value."""
    return any(isinstance(x, torch.Tensor) and type(o) is torch.Tensor and o.shape == x.shape and o.dtype == x.dtype
               and torch.equal(o, x) for o in outputs for x in inputs)


def _finite(outputs: tuple) -> bool:
    return all(torch.isfinite(o).all() for o in outputs if isinstance(o, torch.Tensor) and o.is_floating_point())


def _nbytes(value: Any) -> int:
    return value.numel() * value.element_size() if isinstance(value, torch.Tensor) else 0


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return a.numel() == 0 or torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                                         b.contiguous().reshape(-1).view(torch.uint8))
