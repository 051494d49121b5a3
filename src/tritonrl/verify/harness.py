"""The child side: runs one candidate in a forked, sandboxed process and reports what it did, signed.

Started by the zygote (``tritonrl.verify.zygote``) in its own namespaces (``tritonrl.verify.isolation``) with a
private working directory as cwd; the job's spec, with the per-child secret, arrives in memory. Before the
candidate is imported, everything it must not influence is made or bound: every trial's inputs (from the trusted
task source and seed: no file holds them), the Triton launch hooks and the torch-op watch
(``tritonrl.verify.monitor``), memory poisoning, the timers (``tritonrl.verify.timing``), and on a GPU, when the
parent asks, the reference ``Model``'s timing. The child judges nothing: per step it writes a signed record
``NN_<name>.json`` (ok, flag, error, launches, payload digest) and a payload ``NN_<name>.pt`` (outputs and the
inputs as they are after the forward pass); the parent checks the signature, compares with the reference it
holds in memory and answers ``verdict_NN`` (signed) before the next trial runs. See ``tritonrl.verify.protocol``.

Timing gates: several children may share a GPU (``VerifyConfig.workers_per_gpu``), so before each timing run
the child finishes its GPU work (device-wide sync), writes ``gate_<name>`` and waits for ``verdict_gate_<name>``:
the parent says go only once it holds that GPU's exclusive lock (``tritonrl.verify.gpu_lock``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import traceback
import warnings
from typing import Any

import torch

from tritonrl.verify import protocol
from tritonrl.verify import timing as _timing
from tritonrl.verify.interpreter import classify_interpreter_error, install_interpreter_compat, is_interpreter
from tritonrl.verify.monitor import Monitor, judge_record
from tritonrl.verify.protocol import CODE_FILE
from tritonrl.verify.result import MAX_ERROR_CHARS
from tritonrl.verify.trial import TrialSpec, as_tuple, build_model, exact_fp32, load_task_module, make_inputs

VERDICT_POLL_S = 0.003


def poison_memory(device: str) -> None:
    """Make fresh allocations NaN (ints: max value) so a ``torch.empty`` output never written is caught."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    if device.startswith("cuda"):
        # Also leave NaN in the caching allocator's free blocks, for allocations that bypass the fill.
        block = torch.full((64 * 1024 * 1024,), float("nan"), device=device)
        del block


def unpoison_memory() -> None:
    """Timing measures the kernel, not the NaN fill of every torch.empty."""
    torch.use_deterministic_algorithms(False)
    torch.utils.deterministic.fill_uninitialized_memory = False


def format_error(exc: BaseException, code_path: str = CODE_FILE, limit: int = MAX_ERROR_CHARS) -> str:
    """Exception type and message, plus the candidate's own lines from the traceback (model-readable)."""
    head = f"{type(exc).__name__}: {exc}".strip()
    if len(head) > limit // 2:
        head = head[: limit // 2] + "..."
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.basename(f.filename) == code_path]
    lines = [f"  line {f.lineno}: {(f.line or '').strip()}" for f in frames[-3:]]
    return "\n".join([head, *lines])[:limit]


def _failure(exc: BaseException, flag: str) -> dict[str, str]:
    """The step's flag and error: ``cpu_unsupported`` when the CPU interpreter, not the candidate, failed."""
    if is_interpreter():
        try:
            with open(CODE_FILE, errors="replace") as fh:
                reason = classify_interpreter_error(exc, fh.read())
        except OSError:
            reason = None
        if reason:
            return {"flag": "cpu_unsupported", "error": reason[:MAX_ERROR_CHARS]}
    return {"flag": flag, "error": format_error(exc)}


class _Steps:
    """Numbered, signed step records and payloads; waiting for the parent's signed verdicts."""

    def __init__(self, signer: protocol.Signer) -> None:
        self.index = 0
        self._signer = signer

    def write(self, name: str, ok: bool, tensors: dict | None = None, **info: Any) -> None:
        base = protocol.step_name(self.index, name)
        if tensors is not None:
            info["digest"] = protocol.write_payload(base + ".pt", tensors)
        self._signer.write(".", base + ".json", {"ok": ok, **info})
        self.index += 1

    def wait(self, key: str) -> bool:
        """True for go; a verdict file not signed by the parent is ignored (the real one replaces it)."""
        name = protocol.verdict_name(key)
        while True:
            record = self._signer.read(".", name) if os.path.exists(name) else None
            if record is not None:
                return bool(record.get("go"))
            time.sleep(VERDICT_POLL_S)

    def wait_last(self) -> bool:
        return self.wait(f"{self.index - 1:02d}")

    def gate(self, name: str, device: str) -> str | None:
        """Stop using the GPU, say so, and wait until the parent holds the GPU's exclusive lock for us.

        Returns the error of the device-wide sync (work left behind that failed), if any.
        """
        error = None
        try:
            _sync(device)  # nothing of ours may still run on the GPU once the parent gives up our shared lease
        except BaseException as exc:  # noqa: BLE001 - reported as the timing's error, after the gate
            error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
        self._signer.write(".", protocol.gate_name(name), {"ready": True})
        self.wait(f"gate_{name}")
        return error

    def signed(self, name: str, record: dict) -> None:
        self._signer.write(".", name, record)


def run_candidate(spec: dict[str, Any]) -> None:
    steps = _Steps(protocol.Signer(spec.pop("secret")))
    device = spec["device"]
    warnings.simplefilter("ignore")
    exact_fp32()
    if is_interpreter():  # honest constructs the CPU interpreter lacks (autotune, libdevice, driver queries)
        steps.signed("interpreter.json", install_interpreter_compat())
    monitor = Monitor()
    monitor.install()
    trials = [TrialSpec(**t) for t in spec["trials"]]
    timing_sets = [TrialSpec(**t) for t in spec["timing"].get("sets") or []]
    data = {t.name: make_inputs(load_task_module(t.source), t, device) for t in trials + timing_sets}  # before import
    if spec["timing"]["enabled"] and spec["timing"].get("reference"):
        _time_reference(spec, steps, trials, timing_sets, data)
    if spec["poison"]:
        poison_memory(device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()  # the peak reported is the candidate's, not the poison block's
    module = _import_candidate(steps)
    if module is None:
        return
    first = trials[0]
    try:
        build_model(module.ModelNew, data[first.name][0], first.seed, spec["randomize"], device, first.dtype)
    except BaseException as exc:  # noqa: BLE001 - any failure of the candidate is reported, not raised
        steps.write("compile", ok=False, **_failure(exc, "init_error"))
        return
    steps.write("compile", ok=True)
    for trial in trials:
        if not _run_trial(module, trial, data[trial.name], spec, steps, monitor):
            return
    if spec["timing"]["enabled"]:
        _run_timing(module, trials, timing_sets, data, spec, steps)


def _import_candidate(steps: _Steps) -> Any:
    try:
        spec = importlib.util.spec_from_file_location("candidate", os.path.join("/proc/self/cwd", CODE_FILE))
        module = importlib.util.module_from_spec(spec)
        sys.modules["candidate"] = module
        spec.loader.exec_module(module)
        if not isinstance(getattr(module, "ModelNew", None), type):
            raise ImportError("the module defines no class ModelNew")  # noqa: TRY004 - reported as import_error
    except BaseException as exc:  # noqa: BLE001
        steps.write("compile", ok=False, **_failure(exc, "import_error"))
        return None
    return module


def _run_trial(module: Any, trial: TrialSpec, data: tuple[list, list], spec: dict, steps: _Steps,
               monitor: Monitor) -> bool:
    device = spec["device"]
    init_args, inputs = data
    try:
        model = build_model(module.ModelNew, init_args, trial.seed, spec["randomize"], device, trial.dtype)
    except BaseException as exc:  # noqa: BLE001
        steps.write(trial.name, ok=False, **_failure(exc, "init_error"))
        return False
    start = time.monotonic()
    try:
        output, record = monitor.run_forward(model, inputs)
        _sync(device)
    except BaseException as exc:  # noqa: BLE001
        steps.write(trial.name, ok=False, **_failure(exc, "runtime_error"))
        return False
    elapsed_s = time.monotonic() - start  # the first trial's includes Triton's JIT compilation
    problem = judge_record(record, output, monitor.intact())
    if problem is not None and not (problem[0] == "torch_compute" and not spec.get("strict", True)):
        steps.write(trial.name, ok=False, flag=problem[0], error=problem[1], launches=record.launches)
        return False
    steps.write(trial.name, ok=True, tensors=_pack(output, inputs), launches=record.launches,
                elapsed_s=elapsed_s)
    return steps.wait_last()


def _pack(output: Any, inputs: list) -> dict[str, list]:
    """Plain tensors copied to the CPU; anything else becomes its type name (never pickled). The inputs after the
    forward pass go as digests (``protocol.tensor_digest``): the parent only asks whether they changed."""
    outputs, devices = [], []
    for value in as_tuple(output):
        if type(value) is torch.Tensor:
            outputs.append(value.detach().to("cpu", copy=True).contiguous())
            devices.append(value.device.type)
        else:
            outputs.append(f"{type(value).__module__}.{type(value).__qualname__}")
            devices.append(None)
    after = [protocol.tensor_digest(x) if type(x) is torch.Tensor else None for x in inputs]
    return {"outputs": outputs, "devices": devices, "inputs_after": after}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        _timing.synchronize()  # bound before import: a candidate's no-op torch.cuda.synchronize changes nothing


def _timed_call(model: torch.nn.Module, sets: list[TrialSpec], data: dict):
    """(call, refresh): ``call()`` runs the model on input tensors of its own, which ``refresh(k)`` fills in place
    with timing set ``k``'s values (same tensors, same ``data_ptr``: a cache keyed by them is stale)."""
    _, first = data[sets[0].name]
    inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in first]
    refresh = _timing.make_refresh(inputs, [data[s.name][1] for s in sets])

    def call() -> Any:
        with torch.no_grad():
            return model(*inputs)
    return call, refresh


def _run_timing(module: Any, trials: list[TrialSpec], sets: list[TrialSpec], data: dict, spec: dict,
                steps: _Steps) -> None:
    """Time ModelNew after every correctness trial passed, unpoisoned, on refreshed inputs, with captures.

    The outputs of a few timed calls (chosen by a seed the candidate cannot see) go to the parent, which
    compares them with the reference's for the same input set: the timed work must be the checked work.
    """
    device = spec["device"]
    trial = next(t for t in trials if t.stage == "full")
    error = None
    try:
        peak_trials = _timing.peak_memory_bytes() if device.startswith("cuda") else None
        unpoison_memory()
        model = build_model(module.ModelNew, data[trial.name][0], trial.seed, spec["randomize"], device,
                            trial.dtype)
        call, refresh = _timed_call(model, sets, data)
        policy = _timing.TimingPolicy.from_dict(spec["timing"]["policy"])
    except BaseException as exc:  # noqa: BLE001
        error = format_error(exc)
    gate_error = steps.gate("timing", device)  # reached whatever happened: the parent waits for it
    error = error or gate_error
    if error is None:
        try:
            timer = _timing.make_timer(device)
            result, captures = _timing.time_checked(call, timer=timer, policy=policy, refresh=refresh,
                                                    n_sets=len(sets))
            timer.close()
            info = ({**_timing.device_info(), "trials_peak_memory_bytes": peak_trials}
                    if device.startswith("cuda") else {"gpu": "cpu"})
            packed = _timing.pack_captures(captures)
        except BaseException as exc:  # noqa: BLE001
            error = format_error(exc)
    if error is not None:
        steps.write("timing", ok=False, error=error)
        return
    steps.write("timing", ok=True, tensors=packed, timing=result, device=info)


def _time_reference(spec: dict, steps: _Steps, trials: list[TrialSpec], sets: list[TrialSpec],
                    data: dict) -> None:
    """Time the task's ``Model`` (and optionally ``torch.compile(Model)``), then wait for the parent's go.

    Runs before any candidate code is imported, so the figures are the trusted process's own; the same
    protocol as the candidate's (refreshed input sets, adaptive stopping), without captures. Writes a signed
    ``ref_timing.json``; an error is reported there, never raised (the candidate is still judged).
    """
    trial = next(t for t in trials if t.stage == "full")
    report: dict[str, Any] = {"ok": True}
    try:
        task = load_task_module(trial.source)
        model = build_model(task.Model, data[trial.name][0], trial.seed, spec["randomize"], spec["device"],
                            trial.dtype)
        policy = _timing.TimingPolicy.from_dict(spec["timing"]["policy"])
    except BaseException as exc:  # noqa: BLE001
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    gate_error = steps.gate("ref", spec["device"])  # reached whatever happened: the parent waits for it
    if gate_error and report["ok"]:
        report = {"ok": False, "error": gate_error}
    if report["ok"]:
        try:
            timer = _timing.make_timer(spec["device"])
            call, refresh = _timed_call(model, sets, data)
            report["reference"], _ = _timing.time_checked(call, timer=timer, policy=policy, refresh=refresh,
                                                          n_sets=len(sets), capture=None)
            if spec["timing"]["reference"].get("compile"):
                import torch._inductor.config as inductor_config

                inductor_config.compile_threads = 1  # no worker pool inside the sandboxed child
                compiled, refresh = _timed_call(torch.compile(model), sets, data)
                report["compile"], _ = _timing.time_checked(compiled, timer=timer, policy=policy, refresh=refresh,
                                                            n_sets=len(sets), capture=None)
            timer.close()
            report["device"] = _timing.device_info() if spec["device"].startswith("cuda") else {"gpu": "cpu"}
            del model
            if spec["device"].startswith("cuda"):
                torch.cuda.empty_cache()
        except BaseException as exc:  # noqa: BLE001 - the reference's failure must not pass for the candidate's
            report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    steps.signed("ref_timing.json", report)
    steps.wait("ref")
