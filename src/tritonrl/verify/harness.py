"""The child side: runs one candidate in a forked, sandboxed process and writes what it did to files.

Started by the zygote (``tritonrl.verify.zygote``) in a fresh process group with a private temp dir as cwd.
Everything that must not be influenced by the candidate is bound before the candidate is imported: the
Triton launch counter, memory poisoning, the timers (``tritonrl.verify.timing``). On a GPU, when the parent
asks for it (no cached figure for this task and GPU), the reference ``Model`` is timed here *before* the
candidate is imported, with the same timer, inputs and GPU: ``ref_timing.json``, which the parent reads before it
answers ``verdict_ref`` and the import goes ahead, so candidate code can never touch the figure it is compared
against. The child judges nothing:
it writes, per step, ``NN_<name>.json`` (ok, flag, error, Triton launches) and ``NN_<name>.pt`` (outputs and
the inputs as they are after the forward pass); the trusted parent compares them with the reference and
answers ``verdict_NN`` ("go" or "stop") before the next trial runs, so a wrong candidate stops early.

Timing gates: several children may share a GPU (``VerifyConfig.workers_per_gpu``), so before each timing run
(the reference's, the candidate's) the child finishes its GPU work (device-wide sync), writes ``gate_<name>``
and waits for ``verdict_gate_<name>``: the parent says go only once it holds that GPU's exclusive lock
(``tritonrl.verify.gpu_lock``). The child takes no lock itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
import warnings
from typing import Any

import torch

from tritonrl.verify import timing as _timing
from tritonrl.verify.trial import as_tuple, build_model, load_task_module, save_atomic, to_device

MAX_ERROR_CHARS = 400
VERDICT_POLL_S = 0.003
_launches = [0]


def install_launch_counter() -> None:
    """Count real (non-warm-up) Triton launches, on both the interpreter and the compiled path.

    ``kernel[grid](...)`` and autotuned/heuristic kernels all end in ``JITFunction.run`` (GPU) or
    ``InterpretedFunction.run`` (TRITON_INTERPRET=1); wrapping them at the class level works on triton 3.x.
    """
    from triton.runtime.jit import JITFunction

    classes = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        original = cls.run
        if getattr(original, "_tritonrl_counted", False):
            continue

        def run(self, *args, _original=original, **kwargs):
            if not kwargs.get("warmup", False):
                _launches[0] += 1
            return _original(self, *args, **kwargs)

        run._tritonrl_counted = True
        cls.run = run


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


def format_error(exc: BaseException, code_path: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Exception type and message, plus the candidate's own lines from the traceback (model-readable)."""
    head = f"{type(exc).__name__}: {exc}".strip()
    if len(head) > limit // 2:
        head = head[: limit // 2] + "..."
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == code_path]
    lines = [f"  line {f.lineno}: {(f.line or '').strip()}" for f in frames[-3:]]
    return "\n".join([head, *lines])[:limit]


def run_candidate(spec: dict[str, Any]) -> None:
    device = spec["device"]
    warnings.simplefilter("ignore")
    install_launch_counter()
    if spec["timing"]["enabled"] and spec["timing"].get("reference"):
        _time_reference(spec)
    if spec["poison"]:
        poison_memory(device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()  # the peak reported is the candidate's, not the poison block's
    step = _Steps()
    module = _import_candidate(spec["code_path"], step)
    if module is None:
        return
    trials = spec["trials"]
    first = torch.load(trials[0]["inputs_path"], weights_only=True)
    try:
        build_model(module.ModelNew, first["init_args"], trials[0]["seed"], spec["randomize"], device,
                    trials[0]["dtype"])
    except BaseException as exc:  # noqa: BLE001 - any failure of the candidate is reported, not raised
        step.write("compile", ok=False, flag="init_error", error=format_error(exc, spec["code_path"]))
        return
    step.write("compile", ok=True)
    for trial in trials:
        if not _run_trial(module, trial, spec, step):
            return
    if spec["timing"]["enabled"]:
        _run_timing(module, trials, spec, step)


class _Steps:
    """Numbered step files, and waiting for the parent's verdict after each."""

    def __init__(self) -> None:
        self.index = 0

    def write(self, name: str, ok: bool, tensors: dict | None = None, **info: Any) -> None:
        base = f"{self.index:02d}_{name}"
        if tensors is not None:
            save_atomic(tensors, base + ".pt")
        with open(base + ".json.tmp", "w") as fh:
            json.dump({"ok": ok, **info}, fh)
        os.replace(base + ".json.tmp", base + ".json")
        self.index += 1

    def wait_verdict(self, path: str | None = None) -> bool:
        path = path or f"verdict_{self.index - 1:02d}"
        while not os.path.exists(path):
            time.sleep(VERDICT_POLL_S)
        with open(path) as fh:
            return fh.read().strip() == "go"


def _gate(name: str, device: str) -> str | None:
    """Stop using the GPU, say so, and wait until the parent holds the GPU's exclusive lock for us.

    Returns the error of the device-wide sync (work left behind that failed), if any.
    """
    error = None
    try:
        _sync(device)  # nothing of ours may still run on the GPU once the parent gives up our shared lease
    except BaseException as exc:  # noqa: BLE001 - reported as the timing's error, after the gate
        error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
    with open(f".gate_{name}", "w") as fh:
        fh.write("ready")
    os.replace(f".gate_{name}", f"gate_{name}")
    _Steps().wait_verdict(f"verdict_gate_{name}")
    return error


def _import_candidate(code_path: str, step: _Steps) -> Any:
    try:
        spec = importlib.util.spec_from_file_location("candidate", code_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["candidate"] = module
        spec.loader.exec_module(module)
        if not isinstance(getattr(module, "ModelNew", None), type):
            raise ImportError("the module defines no class ModelNew")  # noqa: TRY004 - reported as import_error
    except BaseException as exc:  # noqa: BLE001
        step.write("compile", ok=False, flag="import_error", error=format_error(exc, code_path))
        return None
    return module


def _run_trial(module: Any, trial: dict, spec: dict, step: _Steps) -> bool:
    device = spec["device"]
    data = torch.load(trial["inputs_path"], weights_only=True)
    try:
        model = build_model(module.ModelNew, data["init_args"], trial["seed"], spec["randomize"], device,
                            trial["dtype"])
    except BaseException as exc:  # noqa: BLE001
        step.write(trial["name"], ok=False, flag="init_error", error=format_error(exc, spec["code_path"]))
        return False
    inputs = to_device(data["inputs"], device)
    _launches[0] = 0
    start = time.monotonic()
    try:
        with torch.no_grad():
            output = model(*inputs)
        _sync(device)
    except BaseException as exc:  # noqa: BLE001
        step.write(trial["name"], ok=False, flag="runtime_error", error=format_error(exc, spec["code_path"]))
        return False
    launches = _launches[0]
    elapsed_s = time.monotonic() - start  # the first trial's includes Triton's JIT compilation
    step.write(trial["name"], ok=True, tensors=_pack(output, inputs), launches=launches, elapsed_s=elapsed_s)
    return step.wait_verdict()


def _pack(output: Any, inputs: list) -> dict[str, list]:
    """Plain tensors copied to the CPU; anything else becomes its type name (never pickled)."""
    outputs, devices = [], []
    for value in as_tuple(output):
        if type(value) is torch.Tensor:
            outputs.append(value.detach().to("cpu", copy=True).contiguous())
            devices.append(value.device.type)
        else:
            outputs.append(f"{type(value).__module__}.{type(value).__qualname__}")
            devices.append(None)
    after = [x.detach().to("cpu", copy=True) if type(x) is torch.Tensor else None for x in inputs]
    return {"outputs": outputs, "devices": devices, "inputs_after": after}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        _timing.synchronize()  # bound before import: a candidate's no-op torch.cuda.synchronize changes nothing


def _run_timing(module: Any, trials: list, spec: dict, step: _Steps) -> None:
    """Time ModelNew on the first full trial's inputs, after every correctness trial passed, unpoisoned."""
    device = spec["device"]
    trial = next(t for t in trials if t["stage"] == "full")
    data = torch.load(trial["inputs_path"], weights_only=True)
    error = None
    try:
        peak_trials = _timing.peak_memory_bytes()
        unpoison_memory()
        model = build_model(module.ModelNew, data["init_args"], trial["seed"], spec["randomize"], device,
                            trial["dtype"])
        inputs = to_device(data["inputs"], device)

        def forward() -> None:
            with torch.no_grad():
                model(*inputs)
    except BaseException as exc:  # noqa: BLE001
        error = format_error(exc, spec["code_path"])
    gate_error = _gate("timing", device)  # reached whatever happened: the parent waits for it
    error = error or gate_error
    if error is None:
        try:
            result = _timing.time_forward(forward, spec["timing"]["warmup"], spec["timing"]["trials"])
            info = {**_timing.device_info(), "trials_peak_memory_bytes": peak_trials}
        except BaseException as exc:  # noqa: BLE001
            error = format_error(exc, spec["code_path"])
    if error is not None:
        step.write("timing", ok=False, error=error)
        return
    step.write("timing", ok=True, timing=result, device=info)


def _time_reference(spec: dict) -> None:
    """Time the task's ``Model`` (and optionally ``torch.compile(Model)``), then wait for the parent's go.

    Runs before any candidate code is imported, so the figures are the trusted process's own. Writes
    ``ref_timing.json``; an error is reported there, never raised (the candidate is still judged).
    """
    ref = spec["timing"]["reference"]
    report: dict[str, Any] = {"ok": True}
    try:
        task = load_task_module(ref["source"])
        data = torch.load(ref["inputs_path"], weights_only=True)
        model = build_model(task.Model, data["init_args"], ref["seed"], spec["randomize"], spec["device"],
                            ref["dtype"])
        inputs = to_device(data["inputs"], spec["device"])
    except BaseException as exc:  # noqa: BLE001
        report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    gate_error = _gate("ref", spec["device"])  # reached whatever happened: the parent waits for it
    if gate_error and report["ok"]:
        report = {"ok": False, "error": gate_error}
    if report["ok"]:
        try:
            warmup, trials = spec["timing"]["warmup"], spec["timing"]["trials"]
            report["reference"] = _timing.time_forward(_no_grad(model, inputs), warmup, trials)
            if ref.get("compile"):
                import torch._inductor.config as inductor_config

                inductor_config.compile_threads = 1  # no worker pool inside the sandboxed child
                report["compile"] = _timing.time_forward(_no_grad(torch.compile(model), inputs), warmup, trials)
            report["device"] = _timing.device_info()
            del model, inputs
            torch.cuda.empty_cache()
        except BaseException as exc:  # noqa: BLE001 - the reference's failure must not pass for the candidate's
            report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]}
    with open("ref_timing.json.tmp", "w") as fh:
        json.dump(report, fh)
    os.replace("ref_timing.json.tmp", "ref_timing.json")
    _Steps().wait_verdict("verdict_ref")


def _no_grad(model: torch.nn.Module, inputs: list):
    def forward() -> None:
        with torch.no_grad():
            model(*inputs)
    return forward
