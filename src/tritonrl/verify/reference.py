"""Reference outputs: computed in a process that never imports candidate code, cached on disk.

Child side (``run_reference``, run in a fork of the zygote): for each trial, build the inputs and ``Model``
exactly as ``tritonrl.verify.trial`` says, save the inputs (``<key>.inputs.pt``, what the candidate child
reads) and, separately, the outputs and the inputs as they are after the forward pass (``<key>.ref.pt``, read
only by the parent). Nothing is timed here: the reference is timed in each candidate's child, before the
candidate is imported, with the same timer and GPU (``tritonrl.verify.harness``, ``docs/timing.md``).

Parent side (``ReferenceCache``): one file pair per (task.key, variant, seed, scale, dtype, device), written
with torch.save + atomic rename; a per-task lock makes the 8-16 candidates of one task share one computation.
The same directory holds the reference's timings, one JSON file per (trial inputs, GPU name, timing protocol).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable
from typing import Any

import torch

from tritonrl.errors import TaskError
from tritonrl.verify.trial import (
    TrialSpec,
    as_tuple,
    build_model,
    load_task_module,
    make_inputs,
    save_atomic,
    synchronize,
    to_device,
)


def default_cache_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"tritonrl-refcache-{os.getuid()}")


# ---------------------------------------------------------------- child side
def run_reference(spec: dict[str, Any]) -> None:
    device, done = spec["device"], []
    for trial in spec["trials"]:
        module = load_task_module(trial["spec"]["source"])
        trial_spec = TrialSpec(**trial["spec"])
        init_args, inputs = make_inputs(module, trial_spec)
        save_atomic({"init_args": init_args, "inputs": inputs}, trial["inputs_path"])
        model = build_model(module.Model, init_args, trial_spec.seed, spec["randomize"], device, trial_spec.dtype)
        dev_inputs = to_device(inputs, device)
        with torch.no_grad():
            outputs = as_tuple(model(*dev_inputs))
        synchronize(device)
        ref = {
            "outputs": [o.detach().to("cpu", copy=True).contiguous() for o in outputs],
            "devices": [o.device.type for o in outputs],
            "inputs_after": [x.detach().to("cpu", copy=True) if isinstance(x, torch.Tensor) else None
                             for x in dev_inputs],
        }
        save_atomic(ref, trial["ref_path"])
        done.append(trial["spec"]["name"])
    with open("reference.json", "w") as fh:
        json.dump({"ok": True, "trials": done}, fh)


# ---------------------------------------------------------------- parent side
class ReferenceCache:
    """Paths of cached references, computing the missing ones through ``run_job`` (a sandboxed fork)."""

    def __init__(self, cache_dir: str | None, device: str, randomize: bool,
                 run_job: Callable[[dict[str, Any]], tuple[bool, str]]) -> None:
        self.dir = cache_dir or default_cache_dir()
        os.makedirs(self.dir, exist_ok=True)
        self.device, self.randomize, self.run_job = device, randomize, run_job
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def paths(self, trial: TrialSpec) -> tuple[str, str]:
        key = trial.cache_key(self.device, self.randomize)
        return os.path.join(self.dir, f"{key}.inputs.pt"), os.path.join(self.dir, f"{key}.ref.pt")

    def ensure(self, trials: list[TrialSpec]) -> None:
        """Compute every missing reference of these trials, once even when called from many threads."""
        with self._guard:
            lock = self._locks.setdefault(trials[0].task_key, threading.Lock())
        with lock:
            missing = []
            for trial in trials:
                inputs_path, ref_path = self.paths(trial)
                if not (os.path.exists(inputs_path) and os.path.exists(ref_path)):
                    missing.append({"spec": trial.to_dict(), "inputs_path": inputs_path, "ref_path": ref_path})
            if not missing:
                return
            ok, error = self.run_job({"kind": "reference", "trials": missing, "device": self.device,
                                      "randomize": self.randomize})
            if not ok:
                raise TaskError(f"the reference Model failed on task {trials[0].task_key}: {error}")

    def load(self, trial: TrialSpec) -> dict[str, Any]:
        return torch.load(self.paths(trial)[1], map_location="cpu", weights_only=True)

    # ------------------------------------------------------------ reference timings (per trial inputs and GPU)
    def timing_path(self, key: str) -> str:
        return os.path.join(self.dir, f"timing-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json")

    def load_timing(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self.timing_path(key)) as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("ok") else None

    def save_timing(self, key: str, report: dict[str, Any]) -> None:
        path = self.timing_path(key)
        tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
        with open(tmp, "w") as fh:
            json.dump(report, fh)
        os.replace(tmp, path)
