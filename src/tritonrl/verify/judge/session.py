"""One candidate's verdict, in the judge: its child's calls, checked one by one, then (on a GPU) its timing.

    facts = Session(judge, message, child_socket).run()     # a thread of the judge (``server``)

The child (``tritonrl.verify.child.harness``) has the candidate imported and answers calls; everything it says is
a claim. What the judge decides from, the child never holds: each trial's reference and the pristine inputs stay
here; the inputs are written into the arena just before the call that reads them; the outputs are read back from
the arena and compared here; inputs are checked byte for byte against the judge's copies. Timing: the reference
is timed in this process; the candidate's calls each get inputs nobody has seen before (a seed derived from the
judge's secret), every timed call's outputs are checked, and the judge's wall clock bounds what the child's
clock reports (``clock_check``). The facts go back to the parent, which turns them into a ``VerifyResult``.
"""

from __future__ import annotations

import json
import random
import secrets
import statistics
import time
from contextlib import contextmanager
from typing import Any

import torch

from tritonrl.errors import TaskError
from tritonrl.verify import timing as timing_mod
from tritonrl.verify import wire
from tritonrl.verify.arena import ALIGN, Arena, fingerprint
from tritonrl.verify.judge.compare import Mismatch, compare_outputs, inputs_changed
from tritonrl.verify.judge.gpu_lock import CrossProcessGpuLease, GpuLease
from tritonrl.verify.judge.references import Reference
from tritonrl.verify.trial import TrialSpec
from tritonrl.verify.timing_stats import RUN_TO_RUN_REL, speedup_interval

CALIBRATION_CALLS = 20      # empty timed regions through the child: the protocol's own cost, seen by both clocks
CLOCK_SLACK_MS = 0.05       # the child's clock may miss the judge's wall clock by this much per call
CLOCK_SLACK_REL = 0.10      # ... or by this share of the call (host jitter grows with the call)
REFERENCE_SETS = 3          # input sets the reference's timed calls rotate through
WATCH_RATE = 0.2            # share of timed calls followed by a watched one (not timed), chosen in secret
WATCH_AT_LEAST = 2          # watched calls per timing run, at least


class ChildGone(Exception):
    """The child closed its socket: it died (or exited) during ``stage``."""


class ChildSilent(Exception):
    """The child did not answer within its time budget during ``stage``."""


class Failed(Exception):
    """The candidate failed ``stage`` with ``flag`` and ``error`` (the verdict is decided)."""

    def __init__(self, stage: str, flag: str | None, error: str) -> None:
        super().__init__(error)
        self.stage, self.flag, self.error = stage, flag, error


class Session:
    def __init__(self, judge: Any, message: dict[str, Any], sock: Any) -> None:
        self.judge, self.sock = judge, sock
        self.trials = [TrialSpec(**t) for t in message["trials"]]
        self.config = message["config"]
        self.timing_spec = message.get("timing") or {}
        self.facts: dict[str, Any] = {"stage": "compile", "flags": [], "error": None, "compiled": False,
                                      "tiny_correct": False, "correct": False, "timing": {}, "stage_s": {}}
        self.budget_s = float(self.config["timeout_s"])  # the child's own time: waits for its answers
        self.arena: Arena | None = None
        gpu = judge.file_lock
        self.lease = (CrossProcessGpuLease(gpu.gpu, judge.lock, gpu) if gpu is not None
                      else GpuLease("cpu", judge.lock))

    # ------------------------------------------------------------ the whole session
    def run(self) -> dict[str, Any]:
        stage = "compile"
        try:
            ready = self.recv(stage)
            self.facts["isolation"] = ready.get("isolation") or {}
            iso = self.facts["isolation"]
            self.judge.timings.trust_disk(bool(iso.get("fs_isolated") and iso.get("readonly")))
            refs = self.references()
            self.compile()
            stage = "full"
            self.correctness(refs)
            if self.timing_spec.get("enabled"):
                stage = "timing"
                self.timing(refs)
        except Failed as failed:
            self.fail(failed.stage, failed.flag, failed.error)
        except ChildSilent as silent:
            self.fail(str(silent), "timeout", f"timed out after {self.config['timeout_s']:g} s ({silent} stage)")
        except ChildGone as gone:
            self.fail(str(gone), "crash", f"the process died during the {gone} stage")
        except wire.BadMessage as exc:
            self.fail(stage, "tampering", f"the candidate's process sent a malformed message: {exc}")
        except TaskError as exc:
            self.facts["flags"].append("reference_error")
            self.facts["error"] = str(exc)
        finally:
            self.close()
        return self.facts

    def fail(self, stage: str, flag: str | None, error: str) -> None:
        self.facts["stage"] = stage
        if stage == "timing":
            self.facts["correct"] = False  # a candidate must not keep its verdict by failing once it is timed
        if flag:
            self.facts["flags"].append(flag)
        self.facts["error"] = error

    def close(self) -> None:
        try:
            wire.send(self.sock, {"op": "bye"})
        except OSError:
            pass
        if self.arena is not None:
            with self.shared():  # nothing of ours may still use it (and a timing run is not disturbed)
                self.arena.close()

    # ------------------------------------------------------------ talking to the child
    def send(self, message: dict, fds: list[int] | None = None) -> None:
        try:
            wire.send(self.sock, message, fds or [])
        except OSError:
            raise ChildGone(message.get("op", "?")) from None

    def recv(self, stage: str) -> dict[str, Any]:
        """The child's next message, charged to its time budget."""
        start = time.monotonic()
        try:
            message, _ = wire.recv(self.sock, timeout_s=max(0.0, self.budget_s))
        except wire.TimedOut:
            raise ChildSilent(stage) from None
        except (wire.Closed, OSError):
            raise ChildGone(stage) from None
        finally:
            self.budget_s -= time.monotonic() - start
        return message

    def call(self, message: dict, stage: str) -> dict[str, Any]:
        self.send(message)
        return self.recv(stage)

    @contextmanager
    def shared(self):
        """GPU work (ours or the child's) alongside other candidates' correctness work, never during a timing."""
        self.facts.setdefault("gpu_lock_wait_s", 0.0)
        self.facts["gpu_lock_wait_s"] += self.lease.share()
        start = time.monotonic()
        try:
            yield
        finally:
            self.lease.release()
            self.facts.setdefault("gpu_lease", []).append(["shared", start, time.monotonic()])

    def lease_for(self, stage: str):
        """The tiny stage runs without a lease: its kernels are small (microseconds of GPU time beside another
        candidate's timing run), and it is where Triton compiles (seconds of CPU) and where a hanging candidate
        usually hangs; holding the GPU's shared lease then would keep every timing run of this GPU waiting."""
        return self.shared() if stage != "tiny" else _no_lease()

    @contextmanager
    def exclusive(self):
        """The GPU to this candidate alone (a timing run); yields the seconds waited for it."""
        with self.lease.exclusive() as waited:
            self.facts["gpu_lock_wait_s"] = self.facts.get("gpu_lock_wait_s", 0.0) + waited
            start = time.monotonic()
            try:
                yield waited
            finally:
                self.facts.setdefault("gpu_lease", []).append(["exclusive", start, time.monotonic()])

    # ------------------------------------------------------------ references and import
    def references(self) -> dict[str, Reference]:
        start = time.monotonic()
        with self.shared():
            refs = self.judge.store.get(self.trials)
        self.facts["stage_s"]["reference"] = round(time.monotonic() - start, 4)
        return refs

    def compile(self) -> None:
        start = time.monotonic()
        with self.shared():
            reply = self.call({"op": "import"}, "compile")
        self.facts["stage_s"]["import"] = round(time.monotonic() - start, 4)
        if not reply.get("ok"):
            raise Failed("compile", _text(reply.get("flag"), "import_error"), _text(reply.get("error"), "?"))
        self.facts["compiled"] = True

    # ------------------------------------------------------------ correctness
    def correctness(self, refs: dict[str, Reference]) -> None:
        start = time.monotonic()
        layouts = {t.name: Layout.of(refs[t.name]) for t in self.trials}
        self.arena = Arena.create(max(layout.nbytes for layout in layouts.values()), self.judge.device)
        self.call_arena()
        for index, trial in enumerate(self.trials):
            stage = "tiny" if trial.stage == "tiny" else "full"
            ref, layout = refs[trial.name], layouts[trial.name]
            with self.lease_for(stage):
                steps = [time.monotonic()]
                reply = self.call(self.build_message(trial, layout), stage)
                if not reply.get("ok"):
                    flag = _text(reply.get("flag"), "init_error")
                    raise Failed(stage, flag, f"{trial.describe()}: {_text(reply.get('error'), '?')}")
                steps.append(time.monotonic())
                layout.write(self.arena, ref.inputs, self.judge.device)
                steps.append(time.monotonic())
                reply = self.call({"op": "run", "inputs": layout.inputs, "outputs": layout.outputs}, stage)
                steps.append(time.monotonic())
                problem = self.judge_call(reply, ref, layout, stage)
                steps.append(time.monotonic())
            self.facts["stage_s"].setdefault("trials", []).append(
                {"trial": trial.name, "build": round(steps[1] - steps[0], 4), "write": round(steps[2] - steps[1], 4),
                 "run": round(steps[3] - steps[2], 4), "check": round(steps[4] - steps[3], 4),
                 "forward": round(_number(reply.get("elapsed_s")), 4), "watch": round(_number(reply.get("judge_s")), 4),
                 "deliver": round(_number(reply.get("deliver_s")), 4)})
            if index == 0:
                self.facts["stage_s"]["jit_first_trial"] = round(float(_number(reply.get("elapsed_s"))), 4)
            if problem is not None:
                raise Failed(stage, problem.flag.value, f"{trial.describe()}: {problem.message}")
            if stage == "tiny":
                self.facts["tiny_correct"] = True
        self.facts.update(correct=True, tiny_correct=True, stage="done")
        self.facts["stage_s"]["correctness"] = round(time.monotonic() - start, 4)

    def call_arena(self) -> None:
        self.send({"op": "arena", "nbytes": self.arena.nbytes}, [self.arena.fd])
        if not self.recv("compile").get("ok"):
            raise Failed("compile", "crash", "the child could not map the judge's memory")

    def build_message(self, trial: TrialSpec, layout: Layout) -> dict[str, Any]:
        return {"op": "build", "seed": trial.seed, "init": layout.init, "randomize": self.config["randomize"],
                "dtype": trial.dtype}

    def judge_call(self, reply: dict, ref: Reference, layout: Layout, stage: str) -> Mismatch | None:
        """Whether one call's reply, and the outputs it left in the arena, are the reference's."""
        from tritonrl.verify.flags import Flag

        if not reply.get("ok"):
            return Mismatch(_flag(reply.get("flag"), Flag.RUNTIME_ERROR), _text(reply.get("error"), "?"))
        launches = reply.get("launches")
        if not isinstance(launches, int) or launches < 1:
            return Mismatch(Flag.NO_TRITON_LAUNCH, "the forward pass launched no Triton kernel")
        return self.check_outputs(reply.get("outputs"), ref, layout, stage)

    def check_outputs(self, metas: Any, ref: Reference, layout: Layout, stage: str) -> Mismatch | None:
        from tritonrl.verify.flags import Flag

        changed = inputs_changed(ref.inputs_after, layout.read_inputs(self.arena))
        if changed is not None:
            return changed
        if not isinstance(metas, list) or not all(isinstance(m, dict) for m in metas):
            return Mismatch(Flag.NOT_PLAIN_TENSOR, "the outputs could not be described")
        actual: list[Any] = []
        for i, meta in enumerate(metas[: len(ref.outputs)]):
            actual.append(self.output(i, meta, layout))
        if len(metas) != len(ref.outputs):
            return Mismatch(Flag.SHAPE_MISMATCH, f"forward returned {len(metas)} outputs, expected {len(ref.outputs)}")
        for i, value in enumerate(actual):
            if isinstance(value, Mismatch):
                return value
            if isinstance(value, _Described):
                return compare_described(i, value, ref.outputs[i])
        devices = [m.get("device") for m in metas]
        return compare_outputs(ref.outputs, actual, devices, self.config["atol"], self.config["rtol"], stage)

    def output(self, i: int, meta: dict, layout: Layout) -> Any:
        """Output ``i`` as the arena holds it, or what the child said came instead (a type name, a shape ...)."""
        from tritonrl.verify.flags import Flag

        if meta.get("type") != "torch.Tensor":
            return _text(meta.get("type"), "an unknown object")
        if not meta.get("copied"):
            return _Described(meta)
        value = layout.output(self.arena, i)
        if fingerprint(value) != meta.get("fingerprint"):
            return Mismatch(Flag.TAMPERING, f"output {i} changed after the forward pass returned it")
        return value

    # ------------------------------------------------------------ timing
    def timing(self, refs: dict[str, Reference]) -> None:
        trial = next(t for t in self.trials if t.stage == "full")
        ref, layout = refs[trial.name], Layout.of(refs[trial.name])
        policy = timing_mod.TimingPolicy.from_dict(self.timing_spec.get("policy"))
        self.budget_s = float(self.config["timeout_s"])  # timing has its own allowance
        start = time.monotonic()
        with self.exclusive():
            mark = time.monotonic()
            ref_report, cached = self.reference_timing(trial, policy)
            self.facts["stage_s"]["reference_timing"] = round(time.monotonic() - mark, 4)
            candidate = self.candidate_timing(trial, ref, layout, policy)
        self.facts["stage_s"]["timing"] = round(time.monotonic() - start, 4)
        self.report_timing(candidate, ref_report, cached)

    def reference_timing(self, trial: TrialSpec, policy: timing_mod.TimingPolicy) -> tuple[dict, bool]:
        """The reference ``Model`` timed here, as the candidate is (cached per inputs' shapes, GPU, policy)."""
        key = "|".join(map(str, (trial.cache_key(self.judge.device, self.config["randomize"]), self.judge.gpu_name,
                                 policy.key(), bool(self.timing_spec.get("compile")), "timing-v4")))
        report = self.judge.timings.get(key)
        if report is not None:
            return report, True
        store = self.judge.store
        try:
            model = store.model(trial)
            sets = [store.fresh(trial, -1 - k, model) for k in range(REFERENCE_SETS)]
            report = {"ok": True, "reference": self.time_in_process(model, sets, policy)}
            if self.timing_spec.get("compile"):
                import torch._inductor.config as inductor_config

                inductor_config.compile_threads = 1
                report["compile"] = self.time_in_process(torch.compile(model), sets, policy)
            report["device"] = (timing_mod.device_info() if self.judge.device.startswith("cuda")
                                else {"gpu": "cpu"})
        except Exception as exc:  # noqa: BLE001 - the reference's failure must not pass for the candidate's
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}, False
        self.judge.timings.put(key, report)
        return report, False

    def time_in_process(self, model: torch.nn.Module, sets: list[Reference],
                        policy: timing_mod.TimingPolicy) -> dict[str, Any]:
        inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in sets[0].inputs]
        timer = timing_mod.make_timer(self.judge.device)
        rng = random.Random(secrets.randbits(64))
        last = [0]

        def call(warm: bool) -> float:
            k = rng.choice([j for j in range(len(sets)) if j != last[0]])
            last[0] = k
            for dst, src in zip(inputs, sets[k].inputs):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            timer.sync()
            with torch.no_grad():
                return timer(lambda: model(*inputs))[0]

        stats = timing_mod.time_calls(call, policy=policy, overhead=lambda: timer(_nothing)[0])
        timer.close()
        return stats

    def candidate_timing(self, trial: TrialSpec, ref: Reference, layout: Layout,
                         policy: timing_mod.TimingPolicy) -> dict[str, Any]:
        reply = self.call({"op": "time_setup", "seed": trial.seed, "init": layout.init,
                           "randomize": self.config["randomize"], "dtype": trial.dtype, "inputs": layout.inputs,
                           "outputs": layout.outputs}, "timing")
        if not reply.get("ok"):
            raise Failed("timing", None, _text(reply.get("error"), "the timed model could not be built"))
        self.facts["timing"]["peak_memory_bytes"] = _number(reply.get("peak_memory_bytes")) or None
        layout.write(self.arena, ref.inputs, self.judge.device)
        mark = time.monotonic()
        calibration = [self.timed_region({"op": "null"})[:2] for _ in range(CALIBRATION_CALLS)]
        self.facts["stage_s"]["clock_calibration"] = round(time.monotonic() - mark, 4)
        model = self.judge.store.model(trial)
        gaps: list[float] = []
        calls = [0]
        rng = random.Random(secrets.randbits(64))
        must_watch = {1, rng.randrange(2, max(3, policy.min_trials + 1))}  # and more at WATCH_RATE

        def checked(watch: bool) -> float:
            """One call on fresh inputs, its outputs checked; a watched one also under the monitor."""
            calls[0] += 1
            fresh = self.judge.store.fresh(trial, calls[0], model)
            layout.write(self.arena, fresh.inputs, self.judge.device)
            ms, wall, watched = self.timed_region({"op": "time", "watch": watch})
            if watched is not None:
                raise timing_mod.TimedCallRejected(f"timed call {calls[0]} did other work than the checked "
                                                   f"calls: {watched}")
            problem = self.check_outputs(self.recv("timing").get("outputs"), fresh, layout, "full")
            if problem is not None:
                raise timing_mod.TimedCallRejected(f"timed call {calls[0]}: {problem.message}")
            if not watch:
                gaps.append(wall - ms)
            return ms

        def call(warm: bool) -> float:
            if warm:
                return self.timed_region({"op": "time", "warm": True})[0]
            if len(gaps) + 1 in must_watch or rng.random() < WATCH_RATE:
                checked(watch=True)  # indistinguishable to the candidate; its time is not a sample
            return checked(watch=False)

        try:
            stats = timing_mod.time_calls(call, policy=policy,
                                          overhead=lambda: statistics.median(ms for ms, _ in calibration))
        except timing_mod.TimedCallRejected as exc:
            raise Failed("timing", "timing_mismatch", str(exc)) from None
        stats["clock_check"] = clock_check(calibration, gaps, stats["samples_ms"])
        return stats

    def timed_region(self, message: dict) -> tuple[float, float, str | None]:
        """(the child's milliseconds, the judge's wall-clock milliseconds, what a watched call's monitor saw
        that breaks a rule) of one timed region."""
        start = time.perf_counter()
        reply = self.call(message, "timing")
        wall = (time.perf_counter() - start) * 1000.0
        if not reply.get("ok", True):
            raise Failed("timing", None, _text(reply.get("error"), "?"))
        ms = reply.get("ms")
        if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not ms >= 0:
            raise wire.BadMessage(f"a timed call reported {ms!r} ms")
        watched = reply.get("watched")
        return float(ms), wall, (watched[:400] if isinstance(watched, str) else None)

    def report_timing(self, candidate: dict, ref_report: dict, cached: bool) -> None:
        reference = ref_report.get("reference") or {}
        device = ref_report.get("device") or {}
        clock = candidate.pop("clock_check")
        facts = self.facts
        facts["timing"].update({"candidate": candidate, "reference": reference, "device": device,
                                "gpu": device.get("gpu"), "sm_clock_mhz": device.get("sm_clock_mhz"),
                                "mem_clock_mhz": device.get("mem_clock_mhz"), "ref_cached": cached,
                                "ref_median_ms": reference.get("median_ms"), "clock_check": clock})
        if not ref_report.get("ok", True) or not reference:
            facts["timing"]["reference_error"] = ref_report.get("error", "no reference timing")
        facts["runtime_ms"] = float(candidate["median_ms"])
        facts["ref_runtime_ms"] = reference.get("median_ms")
        if not clock["ok"]:
            facts["flags"].append("timing_untrusted")
        if reference.get("samples_ms") and candidate.get("samples_ms"):
            _, low, high = speedup_interval(reference["samples_ms"], candidate["samples_ms"], seed=0,
                                            systematic_rel=RUN_TO_RUN_REL)
            facts["timing"]["speedup_ci95"] = [low, high]
        if ref_report.get("compile") and facts["runtime_ms"] > 0:
            facts["timing"]["ref_compile_ms"] = ref_report["compile"]["median_ms"]
            facts["timing"]["speedup_vs_compile"] = ref_report["compile"]["median_ms"] / facts["runtime_ms"]


def clock_check(calibration: list[tuple[float, float]], gaps: list[float], samples: list[float]) -> dict:
    """Whether the child's clock agrees with the judge's wall clock.

    An empty region timed through the child shows the protocol's own cost as the two clocks see it (``wall - ms``:
    the socket round trip, the flush, the synchronizes). A timed call adds the forward to both; a child whose
    clock under-reports shows a larger gap. The gap's median may exceed the calibration's by the larger of
    ``CLOCK_SLACK_MS``, ``CLOCK_SLACK_REL`` of the call, or three median absolute deviations of the calibration."""
    base = [wall - ms for ms, wall in calibration]
    median = statistics.median(base)
    mad = statistics.median(abs(g - median) for g in base)
    call_ms = statistics.median(samples) if samples else 0.0
    allowed = max(CLOCK_SLACK_MS, CLOCK_SLACK_REL * call_ms, 3 * mad)
    excess = (statistics.median(gaps) - median) if gaps else 0.0
    return {"ok": excess <= allowed, "gap_ms": statistics.median(gaps) if gaps else None, "base_gap_ms": median,
            "excess_ms": excess, "allowed_ms": allowed}


class Layout:
    """Where one call's values sit in the arena: constructor tensors, inputs, outputs (slots), and how the
    child is told (descriptors: a slot, a dtype, or a JSON value)."""

    def __init__(self) -> None:
        self.nbytes = 0
        self.init: list[dict] = []
        self.inputs: list[dict] = []
        self.outputs: list[dict] = []
        self._init_tensors: list[tuple[dict, torch.Tensor]] = []

    @classmethod
    def of(cls, ref: Reference) -> Layout:
        layout = cls()
        layout.init = [layout.describe(v, keep=True) for v in ref.init_args]
        layout.inputs = [layout.describe(v) for v in ref.inputs]
        layout.outputs = [layout.slot(o) for o in ref.outputs]
        return layout

    def slot(self, t: torch.Tensor) -> dict:
        slot = {"offset": self.nbytes, "dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape)}
        self.nbytes += _round(max(1, t.numel() * t.element_size()))
        return slot

    def describe(self, value: Any, keep: bool = False) -> dict:
        if isinstance(value, torch.Tensor):
            slot = self.slot(value)
            if keep:
                self._init_tensors.append((slot, value))
            return {"slot": slot}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise TaskError(f"an argument of type {type(value).__name__} cannot be handed to the candidate") from None
        return {"value": value}

    def write(self, arena: Arena, inputs: list, device: str) -> None:
        """The call's inputs (and constructor tensors) into their slots, finished before the child is told."""
        for slot, value in self._init_tensors:
            _view(arena, slot).copy_(value)
        for d, value in zip(self.inputs, inputs):
            if "slot" in d:
                _view(arena, d["slot"]).copy_(value)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def read_inputs(self, arena: Arena) -> list:
        return [_view(arena, d["slot"]) if "slot" in d else d.get("value") for d in self.inputs]

    def output(self, arena: Arena, i: int) -> torch.Tensor:
        return _view(arena, self.outputs[i])


class _Described:
    """An output the child did not copy (wrong shape, dtype or device): what it said it was."""

    def __init__(self, meta: dict) -> None:
        self.meta = meta


def compare_described(i: int, described: _Described, expected: torch.Tensor) -> Mismatch:
    from tritonrl.verify.flags import Flag

    meta = described.meta
    if meta.get("device") != expected.device.type:
        return Mismatch(Flag.DEVICE_MISMATCH, f"output {i} is on {meta.get('device')}, expected {expected.device.type}")
    if list(meta.get("shape") or []) != list(expected.shape):
        return Mismatch(Flag.SHAPE_MISMATCH, f"output {i} has shape {tuple(meta.get('shape') or [])}, expected "
                                             f"{tuple(expected.shape)}")
    return Mismatch(Flag.DTYPE_MISMATCH, f"output {i} has dtype {meta.get('dtype')}, expected "
                                         f"{str(expected.dtype).removeprefix('torch.')}")


def _view(arena: Arena, slot: dict) -> torch.Tensor:
    from tritonrl.verify.trial import torch_dtype

    return arena.tensor(slot["offset"], torch_dtype(slot["dtype"]), slot["shape"])


def _round(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _text(value: Any, default: str) -> str:
    return value[:2000] if isinstance(value, str) else default


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _flag(value: Any, default: Any) -> Any:
    from tritonrl.verify.flags import Flag

    try:
        return Flag(value)
    except ValueError:
        return default


def _nothing() -> None:
    return None


@contextmanager
def _no_lease():
    yield
