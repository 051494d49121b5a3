"""Verification on a Ray cluster: the ``Verifier`` API, with candidates spread over Ray actors.

    from tritonrl.verify.parent.ray_backend import RayVerifier
    with RayVerifier(VerifyConfig(), address="auto") as verifier:   # None: start a local Ray instance
        results = verifier.verify_many(items)                       # same order as items

Each actor owns one local ``Verifier`` (its warm zygote, its reference cache), created once and reused for
every batch: one actor per GPU on a GPU cluster, one per ``cpus_per_actor`` cores on a CPU-only one.

Dispatch: items are grouped by task and the groups cut into units; a free actor takes a unit of a task it
has judged before when there is one (its reference outputs are already cached), else the next unit. Each
actor holds at most two units, so a slow one never hoards work. With ``cache_dir`` on a shared filesystem
all actors share one reference cache (writes are atomic renames, so concurrent writers are safe).

Actors are named after a digest of their config, so every process of one multi-GPU training run that joins
the same cluster (``address`` given) shares one pool; such shared actors are not killed by ``close`` but end
with the process that created them.

Failures: if an actor dies (``ray.exceptions.RayActorError``: killed, out of memory, a node lost) Ray
restarts it, and the units it held go back to the queue split into single items, so a candidate that kills
its actor costs only itself; an item judged ``max_retries + 1`` times without an answer gets a ``crash``
result instead of stopping the batch. Errors the local Verifier raises (a broken task) propagate unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError
from tritonrl.verify.parent.verifier import VerifyItem
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult

if TYPE_CHECKING:
    from tritonrl.util.progress import ProgressLine

UNITS_IN_FLIGHT = 2  # per actor: one running, one queued behind it, so an actor never waits on the driver
PROBE_INTERVAL_S = 1.0  # between calls asking a restarting actor whether it is back
PROBES_BEFORE_GIVING_UP = 300  # about five minutes of an actor not coming back


def import_ray():
    """The ``ray`` module, or a one-line ``ConfigError`` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError("verify.backend=ray needs Ray: pip install 'tritonrl[scale]'") from None
    return ray


class VerifyActor:
    """Body of one Ray actor: a local ``Verifier`` built once; ``factory`` replaces it (tests, custom ones)."""

    def __init__(self, config: VerifyConfig, factory: Callable[[VerifyConfig], object] | None = None) -> None:
        if factory is None:
            from tritonrl.verify.parent.verifier import Verifier as factory
        self.verifier = factory(config)

    def verify_many(self, items: list[VerifyItem]) -> list[VerifyResult]:
        return self.verifier.verify_many(items)

    def info(self) -> dict:
        import ray

        return {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id(),
                "device": getattr(self.verifier, "device", None), "workers": getattr(self.verifier, "workers", None),
                "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def close(self) -> None:
        close = getattr(self.verifier, "close", None)
        if close:
            close()


@dataclass
class _Unit:
    """Items of one task sent to one actor in one call; ``attempts`` counts calls lost to dead actors."""

    task_key: str
    indices: list[int]
    attempts: int = 0


@dataclass
class DispatchStats:
    """What the last ``verify_many`` did: units sent, units lost to dead actors, items given up on."""

    units: int = 0
    retried_units: int = 0
    failed_items: int = 0
    actor_failures: dict[int, int] = field(default_factory=dict)


class RayVerifier:
    """The ``Verifier`` API on Ray actors; see the module docstring for dispatch and failure handling.

    address: None starts a local Ray instance (unless one is already running in this process);
        ``"auto"`` or ``"ray://host:10001"`` joins a cluster.
    num_actors: default one per GPU (``gpus_per_actor`` each), or one per ``cpus_per_actor`` cores without GPUs.
    gpus_per_actor: default 1 when the cluster has GPUs and ``config.device`` is not ``"cpu"``, else 0.
    factory: builds each actor's verifier from the config (default ``Verifier``); must be importable there.
    """

    def __init__(self, config: VerifyConfig | None = None, address: str | None = None,
                 num_actors: int | None = None, gpus_per_actor: float | None = None,
                 cpus_per_actor: int | None = None, max_retries: int | None = None,
                 factory: Callable[[VerifyConfig], object] | None = None) -> None:
        self.config = config or VerifyConfig()
        ray = import_ray()
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        resources = ray.cluster_resources()
        cpus = self.cpus_per_actor = int(cpus_per_actor or self.config.ray_cpus_per_actor)
        self.gpus_per_actor = _gpus_per_actor(gpus_per_actor, self.config, resources.get("GPU", 0.0))
        self.num_actors = num_actors or _default_actor_count(resources, self.gpus_per_actor, cpus)
        self.max_retries = self.config.ray_max_retries if max_retries is None else max_retries
        self.last_stats = DispatchStats()
        actor_config = self._actor_config(cpus)
        # Named actors: the training processes of one accelerate launch (each builds its own RayVerifier)
        # share one pool per config instead of each asking the cluster for all of its GPUs.
        self._shared = address is not None
        pool = f"tritonrl-verify-{_digest(actor_config, factory)}"
        remote_cls = ray.remote(VerifyActor)
        self._actors = [
            remote_cls.options(num_cpus=1 if self.gpus_per_actor else cpus, num_gpus=self.gpus_per_actor,
                               max_restarts=-1, max_task_retries=0, name=f"{pool}-{i}", namespace="tritonrl",
                               get_if_exists=True).remote(actor_config, factory)
            for i in range(self.num_actors)
        ]

    def _actor_config(self, cpus: int) -> VerifyConfig:
        """Each actor's local Verifier runs ``cpus`` candidates at a time on CPU (not every core of the node)."""
        config = dataclasses.replace(self.config, backend="local")
        if not self.gpus_per_actor and not config.workers:
            config.workers = cpus
        return config

    # ------------------------------------------------------------ public API (same as Verifier)
    def verify(self, task, code: str | None = None, completion: str | None = None) -> VerifyResult:
        return self.verify_many([VerifyItem(task, completion=completion, code=code)])[0]

    def verify_many(self, items: list[VerifyItem], progress: bool = False) -> list[VerifyResult]:
        """Results in the order of ``items``, judged on the actors."""
        results: list[VerifyResult | None] = [None] * len(items)
        if items:
            from tritonrl.util.progress import ProgressLine

            with ProgressLine(len(items), "verify (ray)", enabled=progress) as line:
                self._dispatch(items, results, line)
        return results  # type: ignore[return-value]

    def actor_info(self) -> list[dict]:
        """Where each actor runs (pid, node, device, workers, GPU ids): for logs and benchmarks."""
        ray = import_ray()
        return ray.get([actor.info.remote() for actor in self._actors])

    def close(self) -> None:
        """Stop the actors; on a joined cluster they are left to other processes sharing them, and end with
        the process that created them."""
        ray = import_ray()
        if not ray.is_initialized() or self._shared:
            self._actors = []
            return
        for actor in self._actors:
            with contextlib.suppress(Exception):  # a dead or stuck actor is killed below all the same
                ray.get(actor.close.remote(), timeout=30)
            ray.kill(actor, no_restart=True)
        self._actors = []
        if self._owns_ray:
            ray.shutdown()

    def __enter__(self) -> RayVerifier:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ dispatch
    def _dispatch(self, items: list[VerifyItem], results: list, line: ProgressLine) -> None:
        floor = max(1, self.config.workers or (1 if self.gpus_per_actor else self.cpus_per_actor))
        self.last_stats = DispatchStats()
        _Dispatch(self._actors, items, results, self.max_retries, self.last_stats, line).run(
            plan_units(items, self.num_actors, floor))


class _Dispatch:
    """One ``verify_many`` on the actors: a queue of units, at most ``UNITS_IN_FLIGHT`` per actor.

    An actor that failed is on probation: it gets no units until a probe call answers (Ray is restarting it,
    and calls sent meanwhile fail as "unavailable" through no fault of their items). Actor calls run in the
    order sent, so of the units an actor held when it died only the oldest was running: only that one is
    charged an attempt; the others are requeued free.
    """

    def __init__(self, actors: list, items: list[VerifyItem], results: list, max_retries: int,
                 stats: DispatchStats, line: ProgressLine) -> None:
        self.ray = import_ray()
        self.actors, self.items, self.results, self.max_retries = actors, items, results, max_retries
        self.stats, self.line = stats, line
        self.pending: deque[_Unit] = deque()
        self.inflight: dict = {}   # ObjectRef -> (actor index, unit, actor epoch when sent, order sent)
        self.sent = 0
        self.probes: dict = {}     # ObjectRef -> actor index
        self.epoch = [0] * len(actors)
        self.seen: list[set[str]] = [set() for _ in actors]
        self.probation: dict[int, float] = {}  # actor -> when to send its next probe
        self.probe_failures = [0] * len(actors)
        self.alive = set(range(len(actors)))

    def run(self, units: list[_Unit]) -> None:
        self.pending.extend(units)
        while self.pending or self.inflight:
            self._probe_due()
            self._fill()
            if not self.alive:
                raise RuntimeError("every verification actor has died; see the Ray logs (ray status)")
            done, _ = self.ray.wait(list(self.inflight) + list(self.probes), num_returns=1, timeout=0.5)
            if done and done[0] in self.probes:
                self._probe_answered(done[0])
            elif done:
                self._unit_answered(done[0])

    def _fill(self) -> None:
        load = {a: 0 for a in self.alive if a not in self.probation}
        for actor, *_ in self.inflight.values():
            if actor in load:
                load[actor] += 1
        for actor in sorted(load, key=load.get):
            while self.pending and load[actor] < UNITS_IN_FLIGHT:
                unit = _take(self.pending, self.seen[actor])
                ref = self.actors[actor].verify_many.remote([self.items[i] for i in unit.indices])
                self.sent += 1
                self.inflight[ref] = (actor, unit, self.epoch[actor], self.sent)
                self.seen[actor].add(unit.task_key)
                load[actor] += 1
                self.stats.units += 1

    def _unit_answered(self, ref) -> None:
        from ray.exceptions import RayActorError

        actor, unit, epoch, order = self.inflight.pop(ref)
        try:
            answers = self.ray.get(ref)
        except RayActorError as exc:
            if epoch == self.epoch[actor]:
                # The actor's death fails all its calls at once, and Ray reports them in any order: the call that
                # was running is the oldest one sent to it, whichever failure is seen first (charging the one seen
                # first had a correct candidate queued behind a killer blamed for its deaths, 1 run in 8).
                older = [(o, r) for r, (a, _, e, o) in self.inflight.items() if a == actor and e == epoch and o < order]
                if older:
                    running = min(older)[1]
                    _, running_unit, _, _ = self.inflight.pop(running)
                    self._unit_lost(actor, running_unit, charged=True, exc=exc)
                    self._unit_lost(actor, unit, charged=False, exc=exc)
                    return
            self._unit_lost(actor, unit, charged=epoch == self.epoch[actor], exc=exc)
            return
        for index, result in zip(unit.indices, answers, strict=True):
            self.results[index] = result
            self.line.update(result)

    def _unit_lost(self, actor: int, unit: _Unit, charged: bool, exc: Exception) -> None:
        """Requeue the items of a unit whose actor died, one by one so a killer candidate is isolated."""
        self.stats.retried_units += 1
        if not charged:
            self.pending.appendleft(unit)
            return
        self.epoch[actor] += 1
        self.stats.actor_failures[actor] = self.stats.actor_failures.get(actor, 0) + 1
        self.probation[actor] = time.monotonic()
        for index in unit.indices:
            if unit.attempts + 1 > self.max_retries:
                self.results[index] = actor_lost_result(unit.attempts + 1, exc)
                self.stats.failed_items += 1
            else:
                self.pending.appendleft(_Unit(unit.task_key, [index], unit.attempts + 1))

    def _probe_due(self) -> None:
        now = time.monotonic()
        waiting = set(self.probes.values())
        for actor, when in list(self.probation.items()):
            if when <= now and actor not in waiting and actor in self.alive:
                self.probes[self.actors[actor].info.remote()] = actor

    def _probe_answered(self, ref) -> None:
        from ray.exceptions import RayActorError

        actor = self.probes.pop(ref)
        try:
            self.ray.get(ref)
        except RayActorError:
            self.probe_failures[actor] += 1
            if self.probe_failures[actor] > PROBES_BEFORE_GIVING_UP:
                self.alive.discard(actor)
                self.probation.pop(actor, None)
            else:
                self.probation[actor] = time.monotonic() + PROBE_INTERVAL_S
            return
        self.probe_failures[actor] = 0
        self.probation.pop(actor, None)


def plan_units(items: list[VerifyItem], num_actors: int, floor: int) -> list[_Unit]:
    """Group item indices by task, cut each group into units of about ``n / (2 * num_actors)`` (at least
    ``floor``) items, largest groups first so the long tail is small units."""
    groups: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault(item.task.key, []).append(index)
    size = max(floor, math.ceil(len(items) / (UNITS_IN_FLIGHT * max(1, num_actors))))
    units = []
    for key, indices in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        units += [_Unit(key, indices[i:i + size]) for i in range(0, len(indices), size)]
    return units


def actor_lost_result(attempts: int, exc: Exception) -> VerifyResult:
    """The verdict for a candidate whose actor died on every attempt: a crash, reward 0."""
    reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    result = VerifyResult(Stage.COMPILE, flags=[Flag.CRASH.value],
                          error=f"the verification actor died {attempts} times while judging this candidate "
                                f"({reason})")
    return result


def _digest(config: VerifyConfig, factory) -> str:
    text = json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)
    text += f"|{getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', factory)}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _take(pending: deque, seen: set[str]) -> _Unit:
    for unit in pending:
        if unit.task_key in seen:
            pending.remove(unit)
            return unit
    return pending.popleft()


def _gpus_per_actor(requested: float | None, config: VerifyConfig, cluster_gpus: float) -> float:
    value = requested if requested is not None else config.ray_gpus_per_actor
    if value is None:
        return 1.0 if cluster_gpus >= 1 and config.device != "cpu" else 0.0
    if value < 0 or (value > 0 and config.device == "cpu"):
        raise ConfigError(f"ray_gpus_per_actor={value} does not fit verify.device={config.device!r}")
    return float(value)


def _default_actor_count(resources: dict, gpus_per_actor: float, cpus_per_actor: int) -> int:
    if gpus_per_actor:
        count = int(resources.get("GPU", 0.0) // gpus_per_actor)
        if count < 1:
            raise ConfigError("the Ray cluster has no GPUs for verification actors; set verify.device=cpu")
        return count
    return max(1, int(resources.get("CPU", 1.0) // max(1, cpus_per_actor)))

