"""The candidate's child: imports the candidate and answers its judge's calls, one message at a time.

Started by the zygote (``tritonrl.verify.zygote``) in its own namespaces, read-only everywhere but its working
directory, as an unprivileged user where it can be (``tritonrl.verify.child.isolation``), with one socket to
its judge (``tritonrl.verify.judge``). Before the candidate is imported everything it must not influence is made
or bound: the Triton launch hooks and the torch-op watch (``monitor``), the audit hook (``audit``), memory
poisoning and the timers (``tritonrl.verify.shared.timing_protocol``). What the child holds is only what the candidate may see:
the arena the judge maps into it (a call's inputs, written there just before that call) and the seeds that build
``ModelNew`` (not secret: both sides build the same weights). No reference, no future input, no timing sample,
no verdict: the child reports, the judge judges.

The calls (judge -> child, one reply each unless said; ``tritonrl.verify.judge.session`` is the other side):
                         (the child says hello first, isolated and watched)
  start                  start CUDA, poison memory, install the audit -> ready (with the start's seconds)
  import                 import the candidate                         -> ok | flag, error
  arena + fd             map the arena                                -> ok
  build                  seed, build ModelNew(*init), perturb, cast   -> ok | flag, error
  run                    forward on the arena's inputs, watched       -> ok, launches, outputs | flag, error
                         (outputs copied into the arena's output slots when shape and dtype fit)
  time_setup             build the timed ModelNew (poisoned, as every build), its calls unpoisoned -> ok | error
  time                   one timed region around the forward          -> ms; then outputs (copied)
  null                   one timed region around nothing              -> ms
  bye                    exit
"""

from __future__ import annotations

import errno
import importlib.util
import os
import socket
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from tritonrl.verify.child import audit, fidelity, overrides, probe, scramble, seccomp
from tritonrl.verify.child.bounds import UnsetRead
from tritonrl.verify.child.fidelity import DataRace, InterpreterOnly
from tritonrl.verify.child.inert import type_name
from tritonrl.verify.child.interpreter import (
    ConfigsDisagree,
    classify_interpreter_error,
    install_interpreter_compat,
    is_interpreter,
)
from tritonrl.verify.child.isolation import IsolationReport
from tritonrl.verify.child.monitor import ModelTampering, Monitor, hold_garbage
from tritonrl.verify.child.overrides import module_overrides
from tritonrl.verify.child.provenance import INPUT
from tritonrl.verify.child.rules import conduct_problem, judge_record, output_values
from tritonrl.verify.child.shortage import Shortage
from tritonrl.verify.child.streams import graph_problem
from tritonrl.verify.child.toolchain import Toolchain, load_triton_native, take_missed
from tritonrl.verify.shared import timing_protocol, wire
from tritonrl.verify.shared.arena import Arena, fingerprint
from tritonrl.verify.shared.protections import missing_protections
from tritonrl.verify.shared.stopwatch import Stopwatch
from tritonrl.verify.shared.trial import build_model, exact_fp32, torch_dtype
from tritonrl.verify.shared.verdict import MAX_ERROR_CHARS
from tritonrl.verify.shared.wire import CODE_FILE, CODE_PATH

_Tensor = torch.Tensor


POISON_WORDS = 64 * 1024 * 1024  # the NaN block left in the caching allocator (256 MiB of float32)
_empty_cache = torch.cuda.empty_cache  # bound before the candidate's import, as ``timing_protocol.synchronize``
_mem_get_info = torch.cuda.mem_get_info


def poison_memory(device: str) -> None:
    """Make fresh allocations poison so a ``torch.empty`` output never written is caught: on a GPU torch's fill (NaN;
    ints: their maximum), which the watched allocations of two forwards in three replace with a large positive or
    negative value; on the CPU noise of each allocation's own (``scramble.py``)."""
    scramble.set_device(device)
    fill_allocations(True)
    if device.startswith("cuda"):
        # Also leave NaN in the caching allocator's free blocks, for allocations that bypass the fill.
        block = torch.full((POISON_WORDS,), float("nan"), device=device)
        del block


RELEASE_BELOW = 0.25  # a full trial that leaves less than this share of the device free gives its blocks back


def release_memory(device: str) -> bool:
    """After a full trial, under the judge's shared lease, when less than ``RELEASE_BELOW`` of the device is free:
    the blocks this child's allocator kept (the trial's outputs, the watch's snapshots and masks: a gigabyte for a
    256 MiB weight) go back to the device, and the poison block is made again, so an idle child holds what a fresh
    one does (``shared.device_memory``). Only then: given back after every trial, the driver's work of taking the
    blocks back and handing them out again landed in other candidates' timed regions (empty regions of 2.4 ms in a
    busy batch on an H100, docs/benchmarks-history.md, "Out of memory in a busy batch"). Whether it released."""
    if not device.startswith("cuda"):
        return False
    free, total = _mem_get_info(device)
    if free >= RELEASE_BELOW * total:
        return False
    _empty_cache()
    poison_memory(device)
    return True


@contextmanager
def filled_allocations() -> Iterator[None]:
    """Fresh allocations NaN-filled for one watched timed call (its time is no sample), as in the correctness
    trials: the watch credits a launch with the bytes it changed, and in a recycled buffer a kernel that writes the
    value the memory held changes none (an honest ReLU's zeros), which left a torch re-layout of its output
    ``COPIED`` and raised the share of a ReLU's output that repeats torch's input past a copy's (honest kernels
    refused in timed calls only: docs/benchmarks-history.md, "Warm children")."""
    fill_allocations(True)
    try:
        yield
    finally:
        fill_allocations(False)


def unpoison_memory() -> None:
    """Timing measures the kernel, not the NaN fill of every torch.empty."""
    fill_allocations(False)


def fill_allocations(on: bool) -> None:
    """Whether torch fills every fresh allocation (NaN; ints: their maximum). Deterministic mode is set at the C
    level: ``torch.use_deterministic_algorithms`` also imports Inductor (5 to 6 s per process on the GPU machine)."""
    torch._C._set_deterministic_algorithms(on, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = on and not scramble.replaces_fill()
    scramble.set_enabled(on)


def format_error(exc: BaseException, code_path: str = CODE_FILE, limit: int = MAX_ERROR_CHARS) -> str:
    """Exception type and message, plus the candidate's own lines from the traceback (model-readable)."""
    head = f"{type(exc).__name__}: {exc}".strip()
    everything = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in everything if os.path.basename(f.filename) == code_path]
    lines = [f"  line {f.lineno}: {(f.line or '').strip()}" for f in frames[-3:]]
    if "CUDA error" in head:  # the device failed, maybe in the verifier's own work: say where it surfaced
        head = head.splitlines()[0]
        lines += [f"  (verifier) {os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in everything[-3:]
                  if os.path.basename(f.filename) != code_path]
    if len(head) > limit // 2:  # its start and its end: a compiler's message ends with the cause, after the source
        head = f"{head[: limit // 4]} ... {head[-(limit // 4):]}"
    return "\n".join([head, *lines])[:limit]


def explain(exc: BaseException, flag: str) -> dict[str, str]:
    """The step's flag and error: ``cpu_unsupported`` when the CPU interpreter, not the candidate, failed;
    ``data_race`` when its programs shared memory (``fidelity.DataRace``)."""
    refused = sandbox_refused(exc)
    if refused is not None:
        cause = "" if refused is exc else f"\n{type(refused).__name__}: ...{str(refused)[-MAX_ERROR_CHARS // 4:]}"
        return {"flag": "sandbox_violation", "error": f"{format_error(exc)}{cause}\n{SANDBOX_HINT}"[:MAX_ERROR_CHARS]}
    unset = _find(exc, UnsetRead)
    if unset is not None:
        return {"flag": flag, "error": f"{type(unset).__name__}: {unset}"[:MAX_ERROR_CHARS]}
    race = _find(exc, DataRace)
    if race is not None:
        return {"flag": "data_race", "error": f"data race: {race}"[:MAX_ERROR_CHARS]}
    configs = _find(exc, ConfigsDisagree)
    if configs is not None:
        return {"flag": "output_mismatch", "error": str(configs)[:MAX_ERROR_CHARS]}
    host = _find(exc, InterpreterOnly)
    if host is not None:
        return {"flag": "interpreter_only", "error": str(host)[:MAX_ERROR_CHARS]}
    if is_interpreter():
        try:
            with open(CODE_FILE, errors="replace") as fh:
                reason = classify_interpreter_error(exc, fh.read())
        except OSError:
            reason = None
        if reason:
            return {"flag": "cpu_unsupported", "error": reason[:MAX_ERROR_CHARS]}
    return {"flag": flag, "error": format_error(exc)}


SANDBOX_HINT = ("(refused by the sandbox: a candidate's process may not start processes, load native code, "
                "reach its own memory or files outside its directory; docs/verifier.md, \"The candidate's sandbox\")")
REFUSALS = ("Operation not permitted", "Permission denied", "failed to map segment from shared object")


def sandbox_refused(exc: BaseException | None) -> BaseException | None:
    """The exception in ``exc``'s chain that is the operating system refusing what the sandbox forbids: an
    ``EPERM`` (the system-call filter), an ``EACCES`` (a file of root's: ``/proc/self/mem``) or a library the
    loader could not map executable (a ``noexec`` mount)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, OSError) and exc.errno in (errno.EPERM, errno.EACCES) or \
                isinstance(exc, (OSError, ImportError)) and any(text in str(exc) for text in REFUSALS):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def sandbox_refusal(missing: list[str], report: IsolationReport) -> str:
    """Why a child missing ``missing`` protections does not run the candidate (strict mode), in one message."""
    why = f" ({report.view_error})" if report.view_error else ""
    return (f"not judged: the sandbox could not apply {', '.join(missing)}{why}. Run the verifier as root or where "
            "user namespaces are permitted, or set verify.sandbox: best_effort to judge with what applies "
            "(each verdict then says what was missing)")[:MAX_ERROR_CHARS]


def _find(exc: BaseException | None, kind: type) -> BaseException | None:
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _refuse_overrides(model: Any) -> None:
    problem = module_overrides(model)
    if problem is not None:
        raise BuildRefused(problem, "tampering")


class BuildRefused(RuntimeError):
    """The model's construction broke a rule of the watch (a live view of tensor memory handed out, work on
    another CUDA stream, a CUDA graph captured)."""

    def __init__(self, message: str, flag: str) -> None:
        super().__init__(message)
        self.flag = flag


class Held:
    """Candidate objects the harness holds until it drops them inside a watch (``Child.drop``)."""

    def __init__(self, *objects: Any) -> None:
        self.objects = list(objects)


class Child:
    """The candidate's side of one session: its module, its models, the arena, the watch."""

    def __init__(self, sock: socket.socket, spec: dict[str, Any], report: IsolationReport,
                 helper: Toolchain | None = None) -> None:
        self.sock, self.spec, self.report, self.helper = sock, spec, report, helper
        self.refusal: str | None = None  # why this child may not run the candidate (a protection is missing)
        self.candidate_started: Any = lambda: None  # from ``audit.install``: file events judged by path from then
        self.refused_files: Any = lambda: []  # the paths the audit hook refused since (``files_problem``)
        self.seal = wire.Seal(bytes.fromhex(spec.pop("seal")))  # only here: the candidate cannot sign a message
        self.device = spec["device"]
        self.strict = bool(spec.get("strict", True))  # read once, before the candidate: its code cannot change it
        self.monitor = Monitor(CODE_PATH, strict=self.strict)
        self.module: Any = None
        self.model: torch.nn.Module | None = None
        self.timed: torch.nn.Module | None = None
        self.arena: Arena | None = None
        self.timer: Any = None
        self.timed_call: tuple[list, list] | None = None
        self.shortage = Shortage()  # the allocator's own reports of running out (a GPU's)

    # ------------------------------------------------------------ before the candidate
    def prepare(self, startup: Stopwatch) -> dict[str, Any]:
        """Everything before the candidate's import, each step timed on ``startup`` (the judge's diagnosis)."""
        info: dict[str, Any] = {}
        with startup("monitor"):
            warnings.simplefilter("ignore")
            exact_fp32()
            if is_interpreter():  # honest constructs the CPU interpreter lacks (autotune, libdevice, driver queries)
                fidelity.HOLD_HINTS = bool(self.spec.get("hold_hints", True))
                info["interpreter"] = install_interpreter_compat()
            self.monitor.install()
        # The judge says when: a GPU's driver makes contexts one at a time, so of many children started at once the
        # judge lets a few in, first come first served (``Judge.cuda_starts``), and the first get to work at once.
        self.say({"op": "hello"})
        message, _ = wire.recv(self.sock)
        if message.get("op") != "start":
            raise wire.Closed("the judge ended the session before the child's start")
        if self.device.startswith("cuda"):
            with startup("cuda"):
                torch.empty(1, device=self.device)  # CUDA initialised here, not by the candidate's import
            with startup("native"):
                load_triton_native(self.helper, self.spec.get("triton_seed"))
        with startup("poison_audit"):
            if self.spec.get("poison", True):
                poison_memory(self.device)
            if self.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats()  # the peak reported is the candidate's, not the poison block's
            self.candidate_started, self.refused_files = audit.install(
                CODE_PATH, frozenset(self.spec.get("allowed_imports") or ()) or None,
                audit.FilePolicy.for_child(self.spec.get("triton_seed")))
        with startup("seccomp"):
            self.report.seccomp = seccomp.install() and seccomp.active()
        self.shortage.install(self.device)
        hold_garbage()  # from here on, garbage is collected only inside a watch
        overrides.freeze()  # torch.Tensor's class and torch's names as the candidate finds them (``overrides``)
        missing = missing_protections(self.report.to_dict(), list(self.spec.get("sandbox_required") or ()))
        if missing and self.spec.get("sandbox", "strict") == "strict":
            self.refusal = sandbox_refusal(missing, self.report)
        info["startup_s"] = startup.seconds()
        info["started_at"] = startup.began  # monotonic s, just after the fork: diagnosis (Verifier's fork_span)
        return info

    # ------------------------------------------------------------ the calls
    def serve(self) -> None:
        handlers = {"import": self.do_import, "arena": self.do_arena, "build": self.do_build, "run": self.do_run,
                    "probe": self.do_probe, "time_setup": self.do_time_setup, "time": self.do_time,
                    "null": self.do_null}
        while True:
            message, fds = wire.recv(self.sock)
            op = message.get("op")
            if op == "bye" or op not in handlers:
                return
            reply = handlers[op](message, fds)
            if reply is not None:
                self.say(reply)

    def say(self, message: dict) -> None:
        built = take_missed()  # launchers this child's helper had to build: the judge builds them for the next
        wire.send(self.sock, {**message, "launchers": built} if built else message, seal=self.seal)

    def files_problem(self) -> str | None:
        """The files the process was refused since the candidate started (whoever asked: library code may have
        swallowed the error), as a step's error; sticky, so every later step fails too."""
        refused = self.refused_files()
        if not refused:
            return None
        return (f"file access outside the job's directory and its libraries: {'; '.join(refused[:3])} (refused "
                "whatever code asked for it, torch's and Triton's included)")

    def do_import(self, message: dict, fds: list) -> dict:
        if self.refusal is not None:
            return {"ok": False, "flag": "sandbox_unavailable", "error": self.refusal}
        held = Held()
        try:
            spec = importlib.util.spec_from_file_location("candidate", CODE_PATH)
            module = importlib.util.module_from_spec(spec)
            sys.modules["candidate"] = module
            self.candidate_started()
            with self.monitor.phase("import") as record:
                spec.loader.exec_module(module)
                found = getattr(module, "ModelNew", None)  # in the watch: a module's ``__getattr__`` is its code
                if not issubclass(type(found), type):
                    raise ImportError("the module defines no class ModelNew")
            if self.files_problem():
                return {"ok": False, "flag": "file_access", "error": f"at import: {self.files_problem()}"}
            if record.unowned or record.escapes:
                return {"ok": False, "flag": "threads" if record.unowned else "torch_compute",
                        "error": f"at import: {record.unowned or record.escapes[0]}"}
        except BaseException as exc:  # noqa: BLE001 - any failure of the candidate is reported, not raised
            held = Held(exc)
        if held.objects:
            reply = self.failed(held, "import_error")  # dropped inside a watch first, whatever the verdict
            refused = self.files_problem()
            return {"ok": False, **({"flag": "file_access", "error": f"at import: {refused}"} if refused else reply)}
        self.module = module
        return {"ok": True}

    def do_arena(self, message: dict, fds: list) -> dict:
        self.arena = Arena.attach(fds[0], int(message["nbytes"]), self.device)
        self.monitor.origins.trust(self.arena.tensor(0, torch.uint8, [self.arena.nbytes]), INPUT, pin=True)
        return {"ok": True}

    def values(self, descriptors: list) -> list:
        """The arguments the judge laid out: tensors over the arena's slots, Python values, dtypes."""
        out = []
        for d in descriptors:
            if "slot" in d:
                slot = d["slot"]
                out.append(self.arena.tensor(slot["offset"], torch_dtype(slot["dtype"]), slot["shape"]))
            elif "dtype" in d:
                out.append(torch_dtype(d["dtype"]))
            else:
                out.append(d.get("value"))
        return out

    def build(self, message: dict) -> torch.nn.Module:
        """``ModelNew`` built as the reference is, watched (what ``__init__`` computed is remembered as torch's);
        its buffers equal to the reference model's (``state``, digests from the judge) are the task's state."""
        init = self.values(message["init"])
        with self.monitor.phase("build") as record:
            model = build_model(self.module.ModelNew, init, int(message["seed"]), bool(message["randomize"]),
                                self.device, message.get("dtype"), check=_refuse_overrides)
            del init  # the arena's views die in the watch (a finalizer on one is watched)
        if self.files_problem():
            raise BuildRefused(self.files_problem(), "file_access")
        if record.unowned or record.escapes:
            raise BuildRefused(record.unowned or record.escapes[0], "threads" if record.unowned else "torch_compute")
        self.monitor.origins.vouch_state(model, set(message.get("state") or ()))
        return model

    # ------------------------------------------------------------ candidate objects, watched to the end
    def drop(self, held: Held) -> tuple[str, str] | None:
        """Let go of ``held``'s candidate objects inside a watch (their ``__del__``, finalizers and the garbage
        collected with them run there: ``Monitor.phase``); what that did, if no moment may (``conduct_problem``)."""
        with self.monitor.phase("drop") as record:
            held.objects.clear()
            self.monitor.failed = None
        return conduct_problem(record, self.strict, self.monitor.intact())

    def drop_model(self) -> tuple[str, str] | None:
        held, self.model = Held(self.model), None
        return self.drop(held)

    def failed(self, held: Held, flag: str, conduct: tuple[str, str] | None = None) -> dict[str, str]:
        """A step that raised (``held``: its exception, first): what its watched moment did wrong (``conduct``: a
        forward that raised is judged like any other), else the exception explained inside a watch (a candidate's
        ``__str__`` runs there; the harness's own refusals say their flag); then the exception, its traceback and
        what its frames held are dropped inside one. Whatever those moments did wrong is the step's verdict."""
        reply: dict[str, str] | None = None
        exc = held.objects[0]
        kind = type(exc)  # compared by identity: ours are exact types with our text
        if conduct is None and (kind is BuildRefused or kind is ModelTampering):
            reply = {"flag": exc.flag if kind is BuildRefused else "tampering",
                     "error": f"while the model was built: {exc}" if kind is BuildRefused else str(exc)}
        elif conduct is None:
            with self.monitor.phase("explain") as record:
                reply = explain(exc, flag)
            conduct = conduct_problem(record, self.strict, self.monitor.intact())
        del exc
        dropped = self.drop(held)
        conduct = conduct or dropped
        return reply if conduct is None else {"flag": conduct[0], "error": conduct[1][:MAX_ERROR_CHARS]}

    def described(self, held: Held) -> str:
        """``format_error`` of ``held``'s exception inside a watch, then the exception dropped inside one (the
        timing calls' one-line errors); what the watch saw instead, if wrong."""
        with self.monitor.phase("explain") as record:
            text = format_error(held.objects[0])
        conduct = conduct_problem(record, self.strict, self.monitor.intact()) or self.drop(held)
        held.objects.clear()
        return text if conduct is None else f"{conduct[0]}: {conduct[1]}"[:MAX_ERROR_CHARS]

    def short(self) -> dict[str, Any]:
        """The allocator's reports of running out in this step, for the judge (``shortage.py``)."""
        reports = self.shortage.taken()
        return {"device_short": reports} if reports else {}

    def do_build(self, message: dict, fds: list) -> dict:
        dropped = self.drop_model()
        if dropped is not None:
            return {"ok": False, "flag": dropped[0], "error": dropped[1], **self.short()}
        start = time.monotonic()
        held = Held()
        try:
            self.model = self.build(message)
            self.sync()
        except BaseException as exc:  # noqa: BLE001 - explained and dropped inside a watch (``failed``)
            held = Held(exc)
        if held.objects:
            reply = self.failed(held, "init_error")  # dropped inside a watch first, whatever the verdict
            refused = self.files_problem()
            if refused and reply.get("flag") != "file_access":
                reply = {"flag": "file_access", "error": f"while the model was built: {refused}"}
            return {"ok": False, **reply, **self.short()}
        return {"ok": True, "build_s": time.monotonic() - start, **self.short()}

    def do_run(self, message: dict, fds: list) -> dict:
        inputs = self.values(message["inputs"])
        start = time.monotonic()
        held, ran = Held(), Held()
        self.monitor.failed = None
        scramble.next_forward()  # on a GPU, the next poison (``scramble.GPU_PATTERNS``)
        try:
            ran = Held(*self.monitor.run_forward(self.model, inputs))
            self.sync()
        except BaseException as exc:  # noqa: BLE001 - explained and dropped inside a watch (``failed``)
            held = Held(exc)
        if held.objects:  # the forward that raised is judged like any other (a claimed failure buys nothing)
            record, self.monitor.failed = self.monitor.failed, None
            conduct = None if record is None else conduct_problem(record, self.strict, self.monitor.intact())
            held.objects += [record, *ran.objects, inputs]
            del record, ran, inputs
            reply = self.failed(held, "runtime_error", conduct)
            refused = self.files_problem()  # a refused file is the verdict, whatever the forward raised
            return {"ok": False, **({"flag": "file_access", "error": refused} if refused else reply), **self.short()}
        ran.objects.append(inputs)  # the arena's views die in the watch too (a finalizer on one is watched)
        del inputs
        refused = self.files_problem()
        if refused:
            launches = ran.objects[1].launches
            self.drop(ran)
            return {"ok": False, "flag": "file_access", "error": refused, "launches": launches, **self.short()}
        return {**self.answer(message, ran, start), **self.short()}

    def do_probe(self, message: dict, fds: list) -> dict:
        """``ModelNew`` built and called once at the shape a GPU judges, every tensor on the meta device, its
        launches checked against a GPU's limits and not run (``probe.py``), inside a watch; what it held dropped
        inside one. A launch a GPU refuses is the verdict (flag ``interpreter_only``); a forward that does not run
        on the meta device leaves the shape unchecked (said, not failed; its exception explained inside a watch)."""
        dropped = self.drop_model()
        if dropped is not None:
            return {"ok": False, "flag": dropped[0], "error": dropped[1]}
        start = time.monotonic()
        held, refused = Held(), None
        probe.begin()
        try:
            with self.monitor.phase("probe"):
                try:
                    init, inputs = probe.meta_values(message["init"]), probe.meta_values(message["inputs"])
                    model = build_model(self.module.ModelNew, init, int(message["seed"]), False, "meta",
                                        message.get("dtype"), check=_refuse_overrides)
                    held.objects += [model(*inputs), model, inputs, init]
                    del model, inputs, init
                except probe.GpuLimit as exc:
                    refused = str(exc)
                except BaseException as exc:  # noqa: BLE001 - explained and dropped inside a watch (``failed``)
                    held = Held(exc)
        finally:
            launches = probe.end()
        unchecked = None
        if held.objects and isinstance(held.objects[0], BaseException):
            reply = self.failed(held, "runtime_error")
            if reply.get("flag") not in ("runtime_error", "init_error", "cpu_unsupported"):  # what the watch saw
                return {"ok": False, **reply}
            unchecked = str(reply.get("error", "?")).strip().splitlines()[-1][:300]
        else:
            conduct = self.drop(held)
            if conduct is not None:
                return {"ok": False, "flag": conduct[0], "error": f"at the GPU's shape: {conduct[1]}"}
        if self.files_problem():
            return {"ok": False, "flag": "file_access", "error": f"at the GPU's shape: {self.files_problem()}"}
        if refused:
            return {"ok": False, "flag": "interpreter_only", "error": refused, "launches": launches}
        if unchecked is None and not launches:
            unchecked = "no launch reached the interpreter at the GPU's shape"
        return {"ok": True, "launches": launches, "unchecked": unchecked, "probe_s": time.monotonic() - start}

    def answer(self, message: dict, ran: Held, start: float) -> dict:
        """A forward that returned (``ran``: its output and record): judged, its outputs delivered, then dropped
        inside a watch."""
        elapsed_s = time.monotonic() - start  # the first trial's includes Triton's JIT compilation
        output, record = ran.objects[:2]
        problem = judge_record(record, output, self.monitor.intact(), strict=self.strict)
        judged = time.monotonic()
        outputs = self.deliver(output, message["outputs"]) if problem is None else []
        delivered, launches = time.monotonic(), record.launches
        del output, record
        problem = problem or self.drop(ran)
        if problem is not None:
            return {"ok": False, "flag": problem[0], "error": problem[1], "launches": launches}
        released = release_memory(self.device) if message.get("release") else False
        return {"ok": True, "launches": launches, "elapsed_s": elapsed_s,
                "outputs": outputs, "judge_s": judged - start - elapsed_s, "deliver_s": delivered - judged,
                "released": released}

    def deliver(self, output: Any, slots: list) -> list[dict]:
        """Each output described, and copied into its arena slot when it is a plain tensor of the slot's shape
        and dtype on this device; ``fingerprint`` is of the output as the forward left it (the judge checks the
        slot against it: nothing may change an output between the watch and the copy)."""
        described = []
        for i, value in enumerate(output_values(output) or []):
            if type(value) is not _Tensor:
                described.append({"type": type_name(value)})
                continue
            meta = {"type": "torch.Tensor", "dtype": str(value.dtype).removeprefix("torch."),
                    "shape": list(value.shape), "device": value.device.type}
            if i < len(slots) and meta["dtype"] == slots[i]["dtype"] and meta["shape"] == slots[i]["shape"] \
                    and value.device.type == torch.device(self.device).type:
                meta["fingerprint"] = fingerprint(value)
                slot = self.arena.tensor(slots[i]["offset"], value.dtype, value.shape)
                slot.copy_(value)
                meta["copied"] = True
            described.append(meta)
        self.sync()
        return described

    def do_time_setup(self, message: dict, fds: list) -> dict:
        dropped = self.drop_model()
        if dropped is not None:
            return {"ok": False, "error": f"{dropped[0]}: {dropped[1]}"}
        held = Held()
        try:
            # built as the correctness trials' models are, poisoned: a construction that tells stale memory from
            # fresh (a marker written, freed, allocated again and counted) saw the timing model apart, and computed
            # in TF32 there only (the thirtieth red team's ``a06``); its calls are timed unpoisoned
            fill_allocations(True)
            try:
                self.timed = self.build(message)
            finally:
                unpoison_memory()
            self.timed_call = (self.values(message["inputs"]), message["outputs"])
            self.timer = timing_protocol.make_timer(self.device)
        except BaseException as exc:  # noqa: BLE001
            held = Held(exc)
        if held.objects:
            return {"ok": False, "error": self.described(held)}
        peak = timing_protocol.peak_memory_bytes() if self.device.startswith("cuda") else None
        return {"ok": True, "peak_memory_bytes": peak}  # the correctness trials' peak (the poison block excluded)

    def do_time(self, message: dict, fds: list) -> None:
        """One timed call: its milliseconds at once (the judge's wall clock stops there, before any check of the
        child's own: their host time is no part of the call), then what the monitor saw and the outputs. Every
        timed call runs under the monitor (torch compute, launches, torch-made outputs); one the judge asks to
        ``watch`` also byte by byte around each launch (copy kernels), the others with one class per storage
        (nothing on the device). ``watched`` says what broke a rule."""
        inputs, slots = self.timed_call
        coarse = not message.get("watch")
        held = Held()
        try:
            # a coarse call: what no launch may be handed reads as poison, set before the region and undone after;
            # a watched one (not a sample): fresh allocations NaN again, as in the correctness trials
            with self.monitor.tainted_blind(self.timed) if coarse else filled_allocations():
                elapsed, (output, record) = self.timer(
                    lambda: self.monitor.run_forward(self.timed, inputs, coarse=coarse))
        except BaseException as exc:  # noqa: BLE001
            held = Held(exc)
        if held.objects:
            self.say({"ok": False, "error": self.described(held)})
            return None
        self.say({"ok": True, "ms": elapsed})
        try:
            if message.get("watch"):  # a graph's pool stays: the secret share of watched calls finds one in time
                record.unowned = record.unowned or graph_problem()  # after the region: no host time in it
            problem = judge_record(record, output, self.monitor.intact(), weak=True, strict=self.strict)
            if self.files_problem():
                problem = ("file_access", self.files_problem())
            watched = None if problem is None else f"{problem[0]}: {problem[1]}"
        except BaseException as exc:  # noqa: BLE001
            watched = f"runtime_error: {type_name(exc)}"  # our own checks failed: no candidate text
        outputs = None
        if not message.get("warm"):
            values = output_values(output)
            outputs = self.deliver(output, slots) if values is not None else [{"type": type_name(output)}]
            del values
        ran = Held(output, record)
        del output, record
        dropped = self.drop(ran)  # outside the timed region, as every check of the child's own
        watched = watched if dropped is None else f"{dropped[0]}: {dropped[1]}"
        if outputs is None:
            self.timer.learn()  # the hold covers the warm-up's host time; frozen once the timed calls begin
            self.say({"watched": watched})
            return None
        self.say({"watched": watched, "host_ms": self.timer.last_host_ms, "hold_ms": self.timer.hold_ms,
                  "tail_ms": self.timer.last_tail_ms, "outputs": outputs})
        return None

    def do_null(self, message: dict, fds: list) -> dict:
        return {"ms": self.timer(_nothing)[0]}

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            timing_protocol.synchronize()  # bound before import: a candidate's no-op torch.cuda.synchronize changes nothing


def _nothing() -> None:
    return None


def run_candidate(sock: socket.socket, spec: dict[str, Any], report: IsolationReport, startup: Stopwatch,
                  helper: Toolchain | None = None) -> None:
    """The child's whole life after isolation: prepare (the filter last), say ready with what protects it, serve
    the judge until it says bye."""
    child = Child(sock, spec, report, helper)
    try:
        info = child.prepare(startup)
        child.say({"op": "ready", "isolation": report.to_dict(), **info})
        child.serve()
    except (wire.Closed, wire.TimedOut, wire.BadMessage):
        pass
