"""Reference outputs: computed in a process that never imports candidate code, held by the trusted parent.

Child side (``run_reference``, a fork of the zygote): for each trial, make the inputs and ``Model`` exactly as
``tritonrl.verify.trial`` says, run it, and write the outputs and the inputs as they are after the forward pass
(``ref_NN.pt``) with a signed record per trial (``ref_NN.json``), so the parent knows which trial failed and why.

Parent side (``ReferenceStore``): a reference lives in the parent's memory for the Verifier's lifetime (bounded,
least recently used first out) and is what every comparison reads; candidate code never holds it and no path to
it is in a candidate's view. For restarts, each reference is also written to an on-disk cache, signed with
HMAC-SHA256 under a key kept in the cache directory. The disk cache is read only while candidates cannot reach
it (``tritonrl.verify.isolation`` hides the directory from them); without that isolation the Verifier keeps
references in memory only and withdraws the key, so nothing a candidate could have learnt is trusted later. A
cache entry that is missing, corrupt or unsigned is recomputed, never raised.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tritonrl.errors import TaskError
from tritonrl.verify import protocol
from tritonrl.verify.trial import (
    TrialSpec,
    as_tuple,
    build_model,
    exact_fp32,
    load_task_module,
    make_inputs,
    synchronize,
)

KEY_FILE = ".hmac-key"


def default_cache_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"tritonrl-refcache-{os.getuid()}")


# ---------------------------------------------------------------- child side
def run_reference(spec: dict[str, Any]) -> None:
    signer = protocol.Signer(spec.pop("secret"))
    device = spec["device"]
    exact_fp32()
    for index, raw in enumerate(spec["trials"]):
        trial = TrialSpec(**raw)
        try:
            module = load_task_module(trial.source)
            init_args, inputs = make_inputs(module, trial, device)
            model = build_model(module.Model, init_args, trial.seed, spec["randomize"], device, trial.dtype)
            with torch.no_grad():
                outputs = as_tuple(model(*inputs))
            synchronize(device)
            ref = {
                "outputs": [o.detach().to("cpu", copy=True).contiguous() for o in outputs],
                "devices": [o.device.type for o in outputs],
                "inputs_after": [protocol.tensor_digest(x) for x in inputs],
            }
            payload_digest = protocol.write_payload(f"ref_{index:02d}.pt", ref)
        except BaseException as exc:  # noqa: BLE001 - the task's failure, reported with its trial
            signer.write(".", f"ref_{index:02d}.json", {"ok": False, "trial": trial.name,
                                                        "error": f"{type(exc).__name__}: {exc}"[:400]})
            return
        signer.write(".", f"ref_{index:02d}.json", {"ok": True, "trial": trial.name, "digest": payload_digest})
        del model, outputs, inputs, ref


log = logging.getLogger(__name__)

# ---------------------------------------------------------------- parent side
@dataclass
class JobOutcome:
    """What the parent saw of a reference job: each finished trial's payload, or why it stopped."""

    payloads: dict[int, bytes]
    error: str | None = None


class ReferenceStore:
    """References by trial, in memory (LRU, ``max_bytes``), backed by a signed disk cache when trusted.

    ``run_job(trials) -> JobOutcome`` computes missing references in a sandboxed fork (the Verifier's).
    ``trust_disk()`` says whether candidates are isolated from the cache directory. The disk cache is an
    optimization for restarts: it is pruned to ``max_disk_bytes`` (least recently used first), and a write that
    fails (a full disk) leaves that entry in memory only, with a warning; a verdict never depends on it.
    """

    def __init__(self, cache_dir: str | None, device: str, randomize: bool,
                 run_job: Callable[[list[TrialSpec]], JobOutcome], trust_disk: Callable[[], bool],
                 max_bytes: int = 4 << 30, max_disk_bytes: int = 20 << 30) -> None:
        self.dir = cache_dir or default_cache_dir()
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.device, self.randomize, self.run_job = device, randomize, run_job
        self.trust_disk, self.max_bytes, self.max_disk_bytes = trust_disk, max_bytes, max_disk_bytes
        self._memory: OrderedDict[str, tuple[dict, int]] = OrderedDict()
        self._bytes = 0
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.stats = {"computed": 0, "disk_hits": 0, "disk_rejected": 0, "memory_hits": 0, "disk_write_errors": 0,
                      "disk_pruned": 0}
        self._timings: dict[str, dict] = {}

    def key(self, trial: TrialSpec) -> str:
        return trial.cache_key(self.device, self.randomize)

    def get(self, trials: list[TrialSpec]) -> dict[str, dict]:
        """Every trial's reference by trial name; raises ``TaskError`` naming the trial and cause on failure."""
        with self._guard:
            lock = self._locks.setdefault(trials[0].task_key, threading.Lock())
        with lock:
            found = {t.name: self._lookup(t) for t in trials}
            missing = [t for t in trials if found[t.name] is None]
            if missing:
                outcome = self.run_job(missing)
                for index, trial in enumerate(missing):
                    payload = outcome.payloads.get(index)
                    if payload is None:
                        raise TaskError(f"the reference Model failed on task {trial.task_key}, trial {trial.name}: "
                                        f"{outcome.error or 'no result'}")
                    found[trial.name] = self._remember(trial, payload, to_disk=True)
                    self.stats["computed"] += 1
        return found

    def _lookup(self, trial: TrialSpec) -> dict | None:
        key = self.key(trial)
        with self._guard:
            if key in self._memory:
                self._memory.move_to_end(key)
                self.stats["memory_hits"] += 1
                return self._memory[key][0]
        if not self.trust_disk():
            return None
        payload = self._read_signed(key)
        if payload is None:
            return None
        try:
            ref = self._remember(trial, payload, to_disk=False)
        except (TaskError, ValueError, TypeError, KeyError):  # an entry of another format: computed again
            self.stats["disk_rejected"] += 1
            return None
        self.stats["disk_hits"] += 1
        return ref

    def _remember(self, trial: TrialSpec, payload: bytes, to_disk: bool) -> dict:
        ref = protocol.tensors_from_bytes(payload)
        if not _well_formed(ref):
            raise TaskError(f"the reference of task {trial.task_key}, trial {trial.name} is not a plain result")
        key = self.key(trial)
        with self._guard:
            if key not in self._memory:
                self._memory[key] = (ref, len(payload))
                self._bytes += len(payload)
            while self._bytes > self.max_bytes and len(self._memory) > 1:
                _, (_, size) = self._memory.popitem(last=False)
                self._bytes -= size
        if to_disk and self.trust_disk():
            self._write_signed(key, payload)
        return ref

    # ------------------------------------------------------------ the signed disk cache
    def _secret(self, create: bool) -> bytes | None:
        path = os.path.join(self.dir, KEY_FILE)
        try:
            with open(path, "rb") as fh:
                key = fh.read()
            return key if len(key) == 32 else None
        except OSError:
            if not create:
                return None
        protocol.write_atomic(path, os.urandom(32))  # mode 0600, like every file the writer makes
        return self._secret(create=False)

    def _mac(self, data: bytes, create: bool) -> str | None:
        """HMAC-SHA256 of ``data`` under the cache's key (None when there is no key and none is to be made)."""
        secret = self._secret(create)
        return None if secret is None else hmac.new(secret, data, hashlib.sha256).hexdigest()

    def _write_signed(self, key: str, payload: bytes) -> None:
        if len(payload) > self.max_disk_bytes:
            return
        try:
            self._prune(self.max_disk_bytes - len(payload))
            mac = self._mac(payload, create=True)
            if mac is None:
                return
            protocol.write_atomic(os.path.join(self.dir, f"{key}.ref.pt"), payload)
            protocol.write_atomic(os.path.join(self.dir, f"{key}.ref.sig"), mac)
        except OSError as exc:
            self._write_failed(exc)

    def _write_failed(self, exc: OSError) -> None:
        with self._guard:
            self.stats["disk_write_errors"] += 1
            first = self.stats["disk_write_errors"] == 1
        if first:
            log.warning("reference disk cache %s: %s; references stay in memory only (verdicts are unaffected)",
                        self.dir, exc)

    def _prune(self, budget: int) -> None:
        """Remove the least recently used entries (by mtime: reads touch it) until the cache holds <= budget."""
        with self._guard:
            entries = []
            for name in os.listdir(self.dir):
                if name.endswith(".ref.pt"):
                    try:
                        info = os.stat(os.path.join(self.dir, name))
                    except OSError:
                        continue
                    entries.append((info.st_mtime, info.st_size, name))
            total = sum(size for _, size, _ in entries)
            for _, size, name in sorted(entries):
                if total <= budget:
                    break
                for path in (name, name.removesuffix(".pt") + ".sig"):
                    try:
                        os.unlink(os.path.join(self.dir, path))
                    except OSError:
                        pass
                total -= size
                self.stats["disk_pruned"] += 1

    def _read_signed(self, key: str) -> bytes | None:
        if self._secret(create=False) is None:  # no key: nothing on disk is trusted
            return None
        try:
            with open(os.path.join(self.dir, f"{key}.ref.pt"), "rb") as fh:
                payload = fh.read()
            with open(os.path.join(self.dir, f"{key}.ref.sig")) as fh:
                mac = fh.read().strip()
        except OSError:
            return None
        if not hmac.compare_digest(mac, self._mac(payload, create=False) or ""):
            self.stats["disk_rejected"] += 1
            return None
        try:
            os.utime(os.path.join(self.dir, f"{key}.ref.pt"))  # recently used: pruned last
        except OSError:
            pass
        return payload

    def withdraw_key(self) -> None:
        """Forget the disk cache's key: entries signed with it are never trusted again."""
        try:
            os.unlink(os.path.join(self.dir, KEY_FILE))
        except OSError:
            pass

    # ------------------------------------------------------------ reference timings (per trial inputs and GPU)
    def timing_path(self, key: str) -> str:
        return os.path.join(self.dir, f"timing-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json")

    def load_timing(self, key: str) -> dict[str, Any] | None:
        if key in self._timings:
            return self._timings[key]
        if not self.trust_disk():
            return None
        try:
            with open(self.timing_path(key)) as fh:
                wrapper = json.load(fh)
            body, mac = wrapper["body"], wrapper["mac"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        expected = self._mac(str(body).encode(), create=False)
        if expected is None or not hmac.compare_digest(str(mac), expected):
            return None
        data = json.loads(body)
        return data if isinstance(data, dict) and data.get("ok") else None

    def save_timing(self, key: str, report: dict[str, Any]) -> None:
        self._timings[key] = report
        if not self.trust_disk():
            return
        body = json.dumps(report)
        try:
            mac = self._mac(body.encode(), create=True)
            protocol.write_atomic(self.timing_path(key), json.dumps({"body": body, "mac": mac}))
        except OSError as exc:
            self._write_failed(exc)


def _well_formed(ref: Any) -> bool:
    return (isinstance(ref, dict) and isinstance(ref.get("outputs"), list)
            and all(type(t) is torch.Tensor for t in ref["outputs"])
            and isinstance(ref.get("inputs_after"), list)
            and all(d is None or isinstance(d, str) for d in ref["inputs_after"])
            and isinstance(ref.get("devices"), list))
