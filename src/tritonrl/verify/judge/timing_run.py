"""Timing, in the judge: the reference timed in the judge's own process, the candidate through its child.

    run_timing(session, refs)     # after every correctness trial passed; the GPU to this candidate alone

The candidate's timed calls each get inputs nobody has seen before (``ReferenceStore.fresh``), every timed call's
outputs are checked against the reference's for those inputs, every call runs under the child's monitor (torch
compute, no launch, torch-made outputs: ``timing_mismatch``), a secret share of extra calls (not timed) is also
watched byte by byte around each launch (copy kernels), and the judge's wall clock bounds what the child's clock
reports (``clock_check``: its baseline is empty regions each made after the same preparation as a timed call,
interleaved with them). The protocol itself (warm-up, adaptive stop) is ``tritonrl.verify.shared.timing_protocol.time_calls``.

The fresh inputs of the run's first calls are made before it (``prefetch``, under the shared lease), so the time
the GPU is held alone goes to the candidate's calls, not to the reference's forward passes for the next inputs.
"""

from __future__ import annotations

import math
import random
import secrets
import statistics
import threading
import time
from typing import Any

import torch

from tritonrl.verify.judge.failures import Failed, number, text
from tritonrl.verify.judge.layout import Layout
from tritonrl.verify.judge.references import FREE_FLOOR, Reference
from tritonrl.verify.shared import timing_protocol, wire
from tritonrl.verify.shared.device_memory import out_of_memory
from tritonrl.verify.shared.stopwatch import Stopwatch
from tritonrl.verify.shared.timing_stats import RUN_TO_RUN_REL, speedup_interval
from tritonrl.verify.shared.trial import TrialSpec

CALIBRATION_CALLS = 20      # empty timed regions through the child, back to back: the timer's own cost
BASELINE_MIN = 10           # empty regions interleaved with the timed calls (the clock check's baseline): at least
BASELINE_SHARE = 0.5        # ... this many, and this share of the timed calls
CLOCK_SLACK_MS = 0.05       # the child's clock may miss the judge's wall clock by this much per call
CLOCK_SLACK_REL = 0.10      # ... or by this share of the call (host jitter grows with the call)
REFERENCE_SETS = 3          # input sets the reference's timed calls rotate through
GAPS_KEPT = 40              # per-call gaps kept in the report (diagnosis)
WATCH_RATE = 0.2            # share of timed calls after which one is watched byte by byte (not timed), in secret
RESOLUTION_MS = 0.001      # a median below this, once the timer's own cost is taken off, is not resolved (1 us)
PREFETCH_SHARE = 0.08       # fresh input sets made before the GPU is held alone: at most this share of its memory,
                            # ... and only while FREE_FLOOR of it stays free for the candidates' children
PREFETCH_CPU_BYTES = 1 << 30  # ... and on the CPU, this much


def run_timing(session, refs: dict[str, Reference]) -> None:
    trial = next(t for t in session.trials if t.stage == "full")
    ref, layout = refs[trial.name], Layout.of(refs[trial.name])
    policy = timing_protocol.TimingPolicy.from_dict(session.timing_spec.get("policy"))
    session.budget_s = float(session.config["timeout_s"])  # timing has its own allowance
    start = time.monotonic()
    model = session.judge.store.model(trial)
    budget = session.judge.prefetch_budget
    granted = budget.take(planned_sets(policy) * ref.nbytes)
    try:
        with session.shared():
            sets = prefetch(session, trial, model, granted // max(1, ref.nbytes))
        session.facts["stage_s"]["prefetch"] = round(time.monotonic() - start, 4)
        with session.exclusive():
            mark = time.monotonic()
            ref_report, cached = reference_timing(session, trial, policy)
            session.facts["stage_s"]["reference_timing"] = round(time.monotonic() - mark, 4)
            candidate = candidate_timing(session, trial, ref, layout, policy, model, sets)
    finally:
        budget.give(granted)
    session.facts["stage_s"]["timing"] = round(time.monotonic() - start, 4)
    report_timing(session, candidate, ref_report, cached)


def planned_sets(policy: timing_protocol.TimingPolicy) -> int:
    """How many fresh input sets to make before the timing run: as many as a run that stops at its fewest timed
    calls prepares (those calls, the watched ones, the clock check's empty regions). A longer run, or one whose
    sets did not fit in the judge's ``PrefetchBudget``, makes the rest as it goes."""
    n = policy.min_trials
    return n + 2 + math.ceil(WATCH_RATE * n) + max(BASELINE_MIN, math.ceil(BASELINE_SHARE * n))


class PrefetchBudget:
    """The device memory a judge's waiting timing runs may hold in fresh input sets made ahead (``prefetch``):
    each takes what is left, up to what it asks, and gives it back when its run ends. On a GPU it also leaves
    ``FREE_FLOOR`` of the device's memory free: the candidates' children share it, and a child out of
    memory fails its candidate (48 children and a 15% budget left one honest kernel 227 MiB short on an H100)."""

    def __init__(self, nbytes: int, device: str = "cpu") -> None:
        self.left, self.device = nbytes, device
        self._guard = threading.Lock()

    @classmethod
    def for_device(cls, device: str, nbytes: int | None = None) -> PrefetchBudget:
        """``nbytes``, or ``PREFETCH_SHARE`` of the GPU's memory (``PREFETCH_CPU_BYTES`` on the CPU)."""
        if nbytes is None:
            nbytes = (int(PREFETCH_SHARE * torch.cuda.get_device_properties(device).total_memory)
                      if device.startswith("cuda") else PREFETCH_CPU_BYTES)
        return cls(int(nbytes), device)

    def take(self, nbytes: int) -> int:
        with self._guard:
            room = self.left
            if self.device.startswith("cuda"):
                free, total = torch.cuda.mem_get_info(self.device)
                room = min(room, free - int(FREE_FLOOR * total))
            granted = max(0, min(nbytes, room))
            self.left -= granted
            return granted

    def give(self, nbytes: int) -> None:
        with self._guard:
            self.left += nbytes


def prefetch(session, trial: TrialSpec, model: torch.nn.Module, count: int) -> dict[int, Reference]:
    """The fresh inputs (and the reference's outputs for them) of the timing run's first ``count`` calls, made
    while other candidates share the GPU: the run that holds the GPU alone then only writes them into the arena.
    They stay in the judge until their call, as those made during the run do. The device running out of memory
    ends the prefetch (the rest are made during the run), not the candidate's verdict."""
    sets: dict[int, Reference] = {}
    for call in range(1, count + 1):
        try:
            sets[call] = session.judge.store.fresh(trial, call, model)
        except Exception as exc:  # noqa: BLE001 - only the device running out of memory is forgiven here
            if not out_of_memory(exc):
                raise
            break
    return sets


def reference_timing(session, trial: TrialSpec, policy: timing_protocol.TimingPolicy) -> tuple[dict, bool]:
    """The reference ``Model`` timed here, as the candidate is (cached per inputs' shapes, GPU, policy), in the
    run of the task's first candidate to reach its timing. Not ahead of need, at the batch's start: measured while
    the batch's children compiled (a host of 16 cores, 36 children), the judge's thread was held off the CPU for
    longer than the hold covers, and KernelBench GEMM references read 2.7 ms as 3.4-7.5 ms (docs/benchmarks-history.md,
    "Warm children")."""
    judge, compile_baseline = session.judge, bool(session.timing_spec.get("compile"))
    key = "|".join(map(str, (trial.cache_key(judge.device, session.config["randomize"]), judge.gpu_name,
                             policy.key(), compile_baseline, "timing-v8")))
    report = judge.timings.get(key)
    if report is not None:
        return report, True
    store = judge.store
    try:
        model = store.model(trial)
        sets = [store.fresh(trial, -1 - k, model) for k in range(REFERENCE_SETS)]
        report = {"ok": True, "reference": time_in_process(judge.device, model, sets, policy)}
        if compile_baseline:
            import torch._inductor.config as inductor_config

            inductor_config.compile_threads = 1
            report["compile"] = time_in_process(judge.device, torch.compile(model), sets, policy)
        report["load"] = timing_protocol.gpu_load()  # who else was on the device while it was timed
        report["device"] = (timing_protocol.device_info() if judge.device.startswith("cuda") else {"gpu": "cpu"})
    except Exception as exc:  # noqa: BLE001 - the reference's failure must not pass for the candidate's
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}, False
    judge.timings.put(key, report)
    return report, False


def time_in_process(device: str, model: torch.nn.Module, sets: list[Reference],
                    policy: timing_protocol.TimingPolicy) -> dict[str, Any]:
    inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in sets[0].inputs]
    timer = timing_protocol.make_timer(device)
    stats = timing_protocol.time_with_sets(lambda: model(*inputs), inputs, [s.inputs for s in sets], timer=timer,
                                      policy=policy)
    timer.close()
    return stats


def candidate_timing(session, trial: TrialSpec, ref: Reference, layout: Layout, policy: timing_protocol.TimingPolicy,
                     model: torch.nn.Module, sets: dict[int, Reference]) -> dict[str, Any]:
    reply = session.call({"op": "time_setup", "seed": trial.seed, "init": layout.init,
                       "randomize": session.config["randomize"], "dtype": trial.dtype, "inputs": layout.inputs,
                       "outputs": layout.outputs, "state": ref.state}, "timing")
    if not reply.get("ok"):
        raise Failed("timing", None, text(reply.get("error"), "the timed model could not be built"))
    session.facts["timing"]["peak_memory_bytes"] = number(reply.get("peak_memory_bytes")) or None
    layout.write(session.arena, ref.inputs, session.judge.device)
    calibration: list[tuple[float, float]] = []

    def calibrate() -> float:
        """One empty region through the child, back to back, after the warm-up (whose runs size the timer's hold,
        then frozen: these regions carry the same hold as the timed calls). With the empty regions interleaved
        with the timed calls (``baseline``), they make the protocol's own cost (``time_calls``)."""
        mark = time.monotonic()
        calibration.append(timed_region(session, {"op": "null"}))
        stage = session.facts["stage_s"]
        stage["clock_calibration"] = round(stage.get("clock_calibration", 0.0) + time.monotonic() - mark, 4)
        return calibration[-1][0]

    parts = Stopwatch()  # where the exclusive hold goes: stage_s["timing_parts"]
    gaps: list[float] = []
    calls = [0]
    rng = random.Random(secrets.randbits(64))
    must_watch = {1, rng.randrange(2, max(3, policy.min_trials + 1))}  # and more at WATCH_RATE

    baseline: list[tuple[float, float]] = []
    hosts: list[tuple[float, float, float]] = []  # (host, hold, tail ms) of each timed call, as the child says:
                                                  # ... diagnosis only

    fresh_sets = session.facts["timing"]["fresh_sets"] = {"made_before": len(sets), "made_during": 0}  # diagnosis

    def prepare() -> Reference:
        calls[0] += 1
        with parts("fresh"):
            fresh = sets.pop(calls[0], None)
            if fresh is None:
                fresh = session.judge.store.fresh(trial, calls[0], model)
                fresh_sets["made_during"] += 1
        with parts("write"):
            layout.write(session.arena, fresh.inputs, session.judge.device)
        return fresh

    def matched_empty() -> None:
        """An empty region after the same preparation as a timed call (fresh inputs made, written, the previous
        call checked): what both clocks see of the protocol when the judge and child have just been busy elsewhere
        (waking an idle child costs tens of microseconds that back-to-back empty regions never pay)."""
        prepare()
        with parts("empty"):
            baseline.append(timed_region(session, {"op": "null"}))

    def checked(watch: bool) -> float:
        """One call on fresh inputs, its outputs and what the monitor saw checked; a watched one byte by byte."""
        if not watch and (len(baseline) < BASELINE_MIN or len(baseline) < BASELINE_SHARE * (len(gaps) + 1)):
            matched_empty()
        fresh = prepare()
        with parts("watched" if watch else "region"):
            ms, wall = timed_region(session, {"op": "time", "watch": watch})
        with parts("monitor"):
            reply = session.recv("timing")
        watched = what_broke(reply)
        if watched is not None:
            raise timing_protocol.TimedCallRejected(f"timed call {calls[0]} did other work than the checked "
                                               f"calls: {watched}")
        with parts("check"):
            problem = session.check_outputs(reply.get("outputs"), fresh, layout, "full")
        if problem is not None:
            raise timing_protocol.TimedCallRejected(f"timed call {calls[0]}: {problem.message}")
        if not watch:
            gaps.append(wall - ms)
            host, hold, tail = reply.get("host_ms"), reply.get("hold_ms"), reply.get("tail_ms")
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (host, hold, tail)):
                hosts.append((float(host), float(hold), float(tail)))
        return ms

    def call(warm: bool) -> float:
        if warm:
            with parts("warm"):
                ms, _ = timed_region(session, {"op": "time", "warm": True})
                watched = what_broke(session.recv("timing"))
            if watched is not None:
                raise timing_protocol.TimedCallRejected(f"a timed call (warm-up) did other work than the checked calls: {watched}")
            return ms
        if len(gaps) + 1 in must_watch or rng.random() < WATCH_RATE:
            checked(watch=True)  # its time is not a sample
        return checked(watch=False)

    try:
        stats = timing_protocol.time_calls(call, policy=policy.with_overhead(CALIBRATION_CALLS), overhead=calibrate,
                                      interleaved=lambda: [ms for ms, _ in baseline])
    except timing_protocol.TimedCallRejected as exc:
        raise Failed("timing", "timing_mismatch", str(exc)) from None
    finally:
        session.facts["stage_s"]["timing_parts"] = parts.with_counts()
    stats["load"] = timing_protocol.gpu_load()
    stats["clock_check"] = clock_check(baseline, gaps, stats["samples_ms"])
    stats["clock_check"]["back_to_back_gap_ms"] = statistics.median(wall - ms for ms, wall in calibration)
    stats["hold"] = hold_facts(hosts)
    return stats


def hold_facts(hosts: list[tuple[float, float, float]]) -> dict[str, Any] | None:
    """Whether the timed calls' host work outlasted the timer's hold (then the GPU waited for the launch inside the
    region, and the call read slow), and how far the device-wide end trailed each call's stream (``CudaTimer``'s
    tail; past ``TAIL_MS`` the call counted to the device-wide end): the child's own figures, for diagnosis only:
    no verdict reads them."""
    if not hosts:
        return None
    host, tail = [h for h, _, _ in hosts], [t for _, _, t in hosts]
    return {"hold_ms": round(hosts[-1][1], 4), "host_median_ms": round(statistics.median(host), 4),
            "host_max_ms": round(max(host), 4), "over_hold": sum(h > hold for h, hold, _ in hosts),
            "tail_median_ms": round(statistics.median(tail), 4), "tail_max_ms": round(max(tail), 4),
            "tails_over": sum(t > timing_protocol.TAIL_MS for t in tail), "calls": len(hosts)}

def timed_region(session, message: dict) -> tuple[float, float]:
    """(the child's milliseconds, the judge's wall-clock milliseconds) of one timed region: the wall clock stops
    at the child's first answer, which carries only its milliseconds (what the monitor saw comes next)."""
    start = time.perf_counter()
    reply = session.call(message, "timing")
    wall = (time.perf_counter() - start) * 1000.0
    if not reply.get("ok", True):
        raise Failed("timing", None, text(reply.get("error"), "?"))
    ms = reply.get("ms")
    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not ms >= 0:
        raise wire.BadMessage(f"a timed call reported {ms!r} ms")
    return float(ms), wall


def what_broke(reply: dict) -> str | None:
    """What the child's monitor saw in a timed call that breaks a rule (its second answer), or None."""
    watched = reply.get("watched")
    return watched[:400] if isinstance(watched, str) else None


def report_timing(session, candidate: dict, ref_report: dict, cached: bool) -> None:
    reference = ref_report.get("reference") or {}
    device = ref_report.get("device") or {}
    clock = candidate.pop("clock_check")
    facts = session.facts
    facts["timing"].update({"candidate": candidate, "reference": reference, "device": device,
                            "gpu": device.get("gpu"), "sm_clock_mhz": device.get("sm_clock_mhz"),
                            "mem_clock_mhz": device.get("mem_clock_mhz"), "ref_cached": cached,
                            "ref_median_ms": reference.get("median_ms"), "clock_check": clock,
                            "ref_load": ref_report.get("load")})
    if not ref_report.get("ok", True) or not reference:
        facts["timing"]["reference_error"] = ref_report.get("error", "no reference timing")
    facts["runtime_ms"] = float(candidate["median_ms"])
    facts["ref_runtime_ms"] = reference.get("median_ms")
    trusted = True
    if not clock["ok"]:
        facts["flags"].append("timing_untrusted")
        trusted = False
    if not resolved(facts["runtime_ms"]) or (reference and not resolved(reference.get("median_ms"))):
        facts["flags"].append("timing_unresolved")
        facts["timing"]["unresolved"] = {side: unresolved_reason(stats) for side, stats
                                         in (("candidate", candidate), ("reference", reference))
                                         if stats and not resolved(stats.get("median_ms"))}
        trusted = False
    if trusted and reference.get("samples_ms") and candidate.get("samples_ms"):
        _, low, high = speedup_interval(reference["samples_ms"], candidate["samples_ms"], seed=0,
                                        systematic_rel=RUN_TO_RUN_REL)
        facts["timing"]["speedup_ci95"] = [low, high]
    if ref_report.get("compile"):
        facts["timing"]["ref_compile_ms"] = ref_report["compile"]["median_ms"]
        if "timing_unresolved" not in facts["flags"] and resolved(ref_report["compile"]["median_ms"]):
            facts["timing"]["speedup_vs_compile"] = ref_report["compile"]["median_ms"] / facts["runtime_ms"]


def resolved(median_ms: Any) -> bool:
    """Whether a median (overhead taken off) is a runtime the timer resolves: at least ``RESOLUTION_MS``. Below
    it, subtracting the timer's own cost leaves noise (a ReLU of a few microseconds came out 0 on an H100)."""
    return isinstance(median_ms, (int, float)) and median_ms >= RESOLUTION_MS


def unresolved_reason(stats: dict) -> str:
    """Why a side's corrected median is below ``RESOLUTION_MS``: the call itself is within the timer's own cost
    (``too_short``), or the empty regions subtracted from it read longer than the calls did although their least
    did not (``overhead_dominated``: other work on the device while they were timed, docs/timing.md, "Timing
    inside a busy batch")."""
    raw, cost = stats.get("raw_median_ms"), stats.get("overhead_ms")
    least = (stats.get("overhead") or {}).get("min_ms")
    if not isinstance(raw, (int, float)) or not isinstance(cost, (int, float)):
        return "no_figures"
    if isinstance(least, (int, float)) and raw - least >= RESOLUTION_MS:
        return (f"overhead_dominated: the calls' raw median {raw:.4f} ms, the empty regions' {cost:.4f} ms "
                f"subtracted (least {least:.4f} ms)")
    return f"too_short: the calls' raw median {raw:.4f} ms is within the timer's own cost {cost:.4f} ms"


def clock_check(calibration: list[tuple[float, float]], gaps: list[float], samples: list[float]) -> dict:
    """Whether the child's clock agrees with the judge's wall clock.

    An empty region timed through the child (``calibration``: each made after the same preparation as a timed
    call) shows the protocol's own cost as the two clocks see it (``wall - ms``: the socket round trip, waking the
    child, the flush, the hold, the synchronizes). A timed call adds the forward to both; a child whose clock
    under-reports shows a larger gap. The gap's median may exceed the calibration's by the larger of
    ``CLOCK_SLACK_MS``, ``CLOCK_SLACK_REL`` of the call, or three median absolute deviations of the calibration."""
    base = [wall - ms for ms, wall in calibration]
    median = statistics.median(base)
    mad = statistics.median(abs(g - median) for g in base)
    call_ms = statistics.median(samples) if samples else 0.0
    allowed = max(CLOCK_SLACK_MS, CLOCK_SLACK_REL * call_ms, 3 * mad)
    excess = (statistics.median(gaps) - median) if gaps else 0.0
    return {"ok": excess <= allowed, "gap_ms": statistics.median(gaps) if gaps else None, "base_gap_ms": median,
            "excess_ms": excess, "allowed_ms": allowed, "calls": len(gaps), "baseline_calls": len(base),
            "gaps_ms": [round(g, 4) for g in gaps[:GAPS_KEPT]], "base_gaps_ms": [round(g, 4) for g in base[:GAPS_KEPT]]}
