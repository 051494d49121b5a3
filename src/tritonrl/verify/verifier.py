"""The verifier: a staged funnel from model text to a ``VerifyResult``, cheapest stage first.

    from tritonrl.verify import Verifier, VerifyItem
    with Verifier() as verifier:
        result = verifier.verify(task, completion=text)
        results = verifier.verify_many([VerifyItem(task, completion=c) for c in completions], progress=True)

Stages: extract -> static checks -> compile (import, construct ModelNew) -> tiny shape -> full multi-input
trials -> timing (GPU only). Stops at the first failure. Candidate code runs only in a sandboxed child forked
from a warm zygote (``tritonrl.verify.sandbox``); references come from a process that never imports candidate
code (``tritonrl.verify.reference``); comparison happens here, in the parent (``tritonrl.verify.compare``).

On a GPU, up to ``workers_per_gpu`` children share each GPU for import, compilation and correctness; each
timing run has the GPU to itself (``tritonrl.verify.gpu_lock``; docs/timing.md, "Sharing a GPU").
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import nullcontext
from dataclasses import dataclass

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError, TaskError
from tritonrl.tasks.model import KernelTask
from tritonrl.verify import protocol
from tritonrl.verify.compare import compare_trial
from tritonrl.verify.flags import Flag
from tritonrl.verify.gpu_lock import CrossProcessGpuLocks, GpuLease
from tritonrl.verify.isolation import safe_to_hide
from tritonrl.verify.plan import build_trials, mark_cpu_size_limit
from tritonrl.verify.protocol import CODE_FILE
from tritonrl.verify.reference import JobOutcome, ReferenceStore
from tritonrl.verify.result import MAX_ERROR_CHARS, Stage, VerifyResult
from tritonrl.verify.sandbox import Child, VerifierClosed, Zygote, jobs_root, make_workdir
from tritonrl.verify.trial import TrialSpec

log = logging.getLogger(__name__)

FSIZE_LIMIT_BYTES = 4 << 30


@dataclass
class VerifyItem:
    task: KernelTask
    completion: str | None = None
    code: str | None = None


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; choose auto, cpu or cuda")
    if device == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ConfigError("device 'cuda' requested but no CUDA GPU is available")
    return "cpu"


class Verifier:
    """Judges candidates for tasks; one warm zygote and one reference cache shared by all calls."""

    def __init__(self, config: VerifyConfig | None = None) -> None:
        self.config = config or VerifyConfig()
        self.device = resolve_device(self.config.device)
        self.workers = self._count_workers()
        env = {"TRITON_INTERPRET": "1" if self.device == "cpu" else "0"}
        self._zygote = Zygote(env)
        if self.config.workers_per_gpu < 1:
            raise ConfigError(f"verify.workers_per_gpu must be at least 1, not {self.config.workers_per_gpu}")
        # GPU slots and their per-GPU readers-writer locks; None on a CPU (no timing, nothing to share)
        # GPU slots and per-GPU locks: timing is exclusive among this Verifier's children and, through a file
        # lock, among every Verifier on the machine (training ranks, an evaluation beside a run)
        self._gpus = (CrossProcessGpuLocks(self._gpu_ids()[: self.workers], self.config.workers_per_gpu)
                      if self.device == "cuda" else None)
        self._gpu_names: dict[str, str] = {}  # GPU id -> GPU name, learned from trusted reference timings
        self._refs = ReferenceStore(self.config.cache_dir, self.device, self.config.randomize_params,
                                    self._run_reference_job, self._disk_trusted,
                                    max_bytes=int(self.config.reference_memory_gb * (1 << 30)),
                                    max_disk_bytes=int(self.config.reference_disk_gb * (1 << 30)))
        self.sandbox_info: dict = {}
        self._isolation: dict | None = None

    def _gpu_ids(self) -> list[str]:
        """``verify.gpus`` when given (ids as CUDA_VISIBLE_DEVICES names them), else every visible GPU."""
        return [str(g) for g in self.config.gpus] if self.config.gpus else _visible_gpus()

    def _count_workers(self) -> int:
        if self.device == "cuda":
            gpus = len(self._gpu_ids())
            return max(1, min(self.config.workers or gpus, gpus))
        return max(1, self.config.workers or os.cpu_count() or 1)

    # ------------------------------------------------------------ public API
    def verify(self, task: KernelTask, code: str | None = None, completion: str | None = None) -> VerifyResult:
        """The candidate's verdict. Never raises for one item's sake: a failure of the verifier itself (a bug, a
        full disk, memory) is that item's ``verifier_error`` verdict, logged with its traceback, and a batch goes
        on (``verify_many``, ``verify_iter``)."""
        start = time.monotonic()
        try:
            result = self._verify(task, code, completion)
        except ConfigError:
            raise  # the user's configuration: every item would fail the same way
        except VerifierClosed as exc:  # the caller closed the verifier with this item in flight: not judged
            log.info("task %s not judged: %s", getattr(task, "name", "?"), exc)
            result = VerifyResult(Stage.COMPILE, flags=[Flag.VERIFIER_ERROR.value], error=f"not judged: {exc}",
                                  code=code)
        except Exception as exc:  # noqa: BLE001 - reported as the item's verdict and logged, never swallowed
            log.exception("verifier error on task %s", getattr(task, "name", "?"))
            result = VerifyResult(Stage.COMPILE, flags=[Flag.VERIFIER_ERROR.value],
                                  error=_clip(f"verifier error ({type(exc).__name__}): {exc}"), code=code)
        result.elapsed_s = round(time.monotonic() - start, 3)
        return result

    @property
    def concurrency(self) -> int:
        """Candidates in flight at once: one per CPU worker, or ``workers_per_gpu`` per GPU."""
        return self._gpus.capacity if self._gpus is not None else self.workers

    def verify_many(self, items: list[VerifyItem], progress: bool = False) -> list[VerifyResult]:
        """Results in the order of ``items``; ``concurrency`` candidates run at a time."""
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self.verify, it.task, it.code, it.completion) for it in items]
            bar = progress_bar(len(items)) if progress else None
            results = []
            for future in futures:
                results.append(future.result())
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        return results

    def verify_iter(self, items: list[VerifyItem]):
        """``(index, result)`` for each item as it finishes (not in order). Closing the generator (or an exception
        in it, such as Ctrl-C) cancels the items not started and returns at once; ``close()`` ends running ones."""
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            futures = {pool.submit(self.verify, it.task, it.code, it.completion): i for i, it in enumerate(items)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._zygote.close()
        if self._isolation is not None and not self._disk_trusted():
            self._refs.withdraw_key()  # what unisolated candidates could have read is never trusted later

    def __enter__(self) -> Verifier:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ the funnel
    def _verify(self, task: KernelTask, code: str | None, completion: str | None) -> VerifyResult:
        if code is None and completion is not None:
            from tritonrl.extract import extract_code

            code = extract_code(completion)
        if not code:
            return VerifyResult(Stage.EXTRACT, flags=[Flag.NO_CODE.value],
                                error="no Python code defining ModelNew was found in the completion")
        if self.config.static_checks:
            from tritonrl.verify.static import run_static_checks

            violations = run_static_checks(code, self.config.strict)
            if violations:
                flags = list(dict.fromkeys(Flag(v.flag).value for v in violations))
                error = "; ".join(f"line {v.line}: {v.message}" if v.line else v.message for v in violations)
                return VerifyResult(Stage.STATIC, flags=flags, error=error[:MAX_ERROR_CHARS], code=code)
        result = VerifyResult(Stage.COMPILE, valid=True, code=code)
        start = time.monotonic()
        try:
            trials = build_trials(task, self.config, self.device)
            result.flags += trials.flags  # reduced_shapes: judged at sizes the CPU can run (tritonrl.verify.plan)
            sets = timing_sets(trials, self.config.timing_sets) if self._timed() else []
            refs = self._refs.get(trials + sets)
        except TaskError as exc:  # the task's fault, this item's verdict: a batch goes on
            result.flags.append(Flag.REFERENCE_ERROR.value)
            result.error = _clip(str(exc))
            return result
        result.timing["stage_s"] = {"reference": round(time.monotonic() - start, 4)}
        with self._gpu_slot() as lease:
            self._run_candidate(result, code, trials, sets, refs, lease)
        return mark_cpu_size_limit(result, trials.oversize)

    def _gpu_slot(self):
        """A GPU slot with a shared lease on its GPU (released on exit, whatever happened); None on a CPU."""
        return self._gpus.slot() if self._gpus is not None else nullcontext(None)

    def _timed(self) -> bool:
        """GPU only. ``TRITONRL_TIMING_ON_CPU=1`` is a test seam: the same checked protocol, wall clock, on CPU."""
        return self.config.timing and (self.device == "cuda" or os.environ.get("TRITONRL_TIMING_ON_CPU") == "1")

    def _limits(self, threads: int) -> dict:
        memory = self.config.sandbox_memory_gb
        return {
            "as_bytes": int(memory * (1 << 30)) if memory and self.device == "cpu" else None,
            "cpu_s": int(self.config.timeout_s * max(1, threads)) + 30,  # backstop; the wall clock rules
            "fsize_bytes": FSIZE_LIMIT_BYTES,
            "threads": threads,
            "network_isolation": self.config.network_isolation,
            "fs_isolation": self.config.fs_isolation,
            "hide": self._hidden_paths(),
        }

    def _hidden_paths(self) -> list[str]:
        """What no candidate may see: every job directory, the reference cache, the temp dir where safe."""
        paths = [jobs_root(), self._refs.dir]
        temp = os.path.dirname(jobs_root())
        if safe_to_hide(temp):
            paths.append(temp)
        return [p for p in paths if safe_to_hide(p)]

    def _disk_trusted(self) -> bool:
        """The on-disk reference cache may be read: candidates cannot reach it (probed once)."""
        if self._isolation is None:
            self._isolation = self._probe_isolation()
        return bool(self._isolation.get("fs_isolated"))

    def _probe_isolation(self) -> dict:
        workdir = make_workdir()
        child = self._zygote.submit("probe", workdir, {}, {}, self._limits(1))  # no GPU, no slot
        try:
            child.wait_for("sandbox.json", time.monotonic() + 60)
            report = child.read_json("sandbox.json") or {}  # none (a dead probe): nothing isolated, disk untrusted
        finally:
            child.finish()
        self.sandbox_info = report
        return report

    def _spawn(self, kind: str, spec: dict, workdir: str, lease: GpuLease | None) -> Child:
        env = {"CUDA_VISIBLE_DEVICES": lease.gpu} if lease is not None else {}
        threads = 1 if self.device == "cuda" else max(1, (os.cpu_count() or 1) // self.concurrency)
        return self._zygote.submit(kind, workdir, spec, env, self._limits(threads))

    def _run_reference_job(self, trials: list[TrialSpec]) -> JobOutcome:
        """Compute these trials' references in one sandboxed fork; each trial has its own time limit."""
        workdir = make_workdir()
        spec = {"trials": [t.to_dict() for t in trials], "device": self.device,
                "randomize": self.config.randomize_params}
        per_trial_s = max(60.0, 2 * self.config.timeout_s)
        payloads: dict[int, bytes] = {}
        error = None
        with self._gpu_slot() as lease:
            child = self._spawn("reference", spec, workdir, lease)
            try:
                for index, trial in enumerate(trials):
                    name = f"ref_{index:02d}.json"
                    outcome = child.wait_for(name, time.monotonic() + per_trial_s)
                    record = child.read_json(name) if outcome == "ok" else None
                    if record is None or not record.get("ok"):
                        error = _reference_failure(child, trial, outcome, record, per_trial_s,
                                                   self.config.sandbox_memory_gb)
                        break
                    payload = child.read_payload(f"ref_{index:02d}.pt", record.get("digest"))
                    if payload is None:
                        error = f"trial {trial.name}: the reference's result could not be read"
                        break
                    payloads[index] = payload
            finally:
                child.finish()  # killed and reaped before its lease goes back
        return JobOutcome(payloads, error)

    def _run_candidate(self, result: VerifyResult, code: str, trials: list[TrialSpec], sets: list[TrialSpec],
                       refs: dict[str, dict], lease: GpuLease | None) -> None:
        """One child, start to end. On a GPU it holds ``lease`` shared until it is killed and reaped, except
        while it is timed (exclusive); the caller releases the lease afterwards, exceptions included."""
        workdir = make_workdir()
        protocol.write_atomic(os.path.join(workdir, CODE_FILE), code)
        slot = lease.gpu if lease is not None else None
        ref_key = self._ref_timing_key(trials, slot)
        cached = self._refs.load_timing(ref_key) if ref_key else None
        spec = {
            "device": self.device, "randomize": self.config.randomize_params,
            "poison": self.config.poison_memory, "strict": self.config.strict,
            "timing": {"enabled": self._timed(), "policy": self._policy().as_dict(),
                       "sets": [t.to_dict() for t in sets],
                       "reference": ({"compile": self.config.compile_baseline}
                                     if self._timed() and cached is None else None)},
            "trials": [t.to_dict() for t in trials],
        }
        stages = result.timing["stage_s"]
        start = time.monotonic()
        child = self._spawn("candidate", spec, workdir, lease)
        try:
            ref_timing = cached
            if spec["timing"]["reference"]:
                ref_timing = self._ref_timing_step(child, trials, lease)
                stages["ref_timing"] = round(time.monotonic() - start, 4)
            deadline = time.monotonic() + self.config.timeout_s  # the reference's timing is not the candidate's
            mark = time.monotonic()
            compiled = self._compile_step(result, child, deadline)
            stages["import"], mark = round(time.monotonic() - mark, 4), time.monotonic()
            passed = compiled and self._trial_steps(result, child, trials, refs, deadline)
            if compiled:  # Triton compiles at the first launch: the first trial's forward, as the child timed it
                first = child.read_json("01_" + trials[0].name + ".json") or {}
                stages["jit_first_trial"] = round(float(first.get("elapsed_s") or 0.0), 4)
                stages["correctness"] = round(time.monotonic() - mark, 4)
                mark = time.monotonic()
            if passed:
                self._timing_step(result, child, trials, refs, deadline, ref_timing, cached is not None, lease)
                if result.stage is Stage.TIMING:  # timed calls that hung, raised or died were never checked:
                    result.correct = False  # a candidate must not keep its verdict by failing once it is timed
                stages["timing"] = round(time.monotonic() - mark, 4)
            self.sandbox_info = child.read_json("sandbox.json") or self.sandbox_info
            if self.sandbox_info.get("fs_isolated") is False and self.config.fs_isolation:
                result.timing["isolation"] = self.sandbox_info
            if lease is not None:  # waiting for this GPU's lock (shared to start, exclusive to be timed)
                stages["gpu_lock_wait"] = round(lease.waited_s, 4)
        finally:
            child.finish()

    # ------------------------------------------------------------ calibrated timing (docs/timing.md)
    def _ref_timing_key(self, trials: list[TrialSpec], slot: str | None) -> str | None:
        """Cache key of the reference's timing on this slot's GPU; None until that GPU's name is known."""
        gpu = self._gpu_names.get(slot) if slot is not None else None
        if not self._timed() or gpu is None:
            return None
        first_full = _first_full(trials)
        return reference_timing_key(first_full, gpu, self.config)

    def _ref_timing_step(self, child: Child, trials: list[TrialSpec], lease: GpuLease | None) -> dict | None:
        """Read the reference timing the child made before importing the candidate, cache it, then say go.

        The child times the reference with the GPU to itself (exclusive), then goes on under a shared lease."""
        deadline = time.monotonic() + max(120.0, 4 * self.config.timeout_s)
        outcome = run_exclusive(child, lease, "ref", "ref_timing.json", deadline)
        report = child.read_json("ref_timing.json") if outcome == "ok" else None
        if lease is not None:
            lease.share()  # writer-preferring: waits for timing runs already queued on this GPU
        child.verdict("ref")
        slot = lease.gpu if lease is not None else None
        if not report or not report.get("ok"):
            return {"ok": False, "error": (report or {}).get("error", "the reference was not timed")}
        gpu = report["device"]["gpu"]
        if slot is not None:
            self._gpu_names[slot] = gpu
        first_full = _first_full(trials)
        self._refs.save_timing(reference_timing_key(first_full, gpu, self.config), report)
        return report

    def _wait_step(self, result: VerifyResult, child: Child, name: str, stage: Stage,
                   deadline: float) -> dict | None:
        """The child's status for this step, or None after recording a timeout or crash on ``result``."""
        outcome = child.wait_for(name, deadline)
        if outcome == "ok":
            status = child.read_json(name)
            if status is not None:
                return status
            if child.forged(name):
                result.stage = stage
                result.flags.append(Flag.TAMPERING.value)
                result.error = "a step record was written by the candidate, not by the verifier's harness"
                return None
            outcome = "exit"
        result.stage = stage
        if outcome == "timeout":
            result.flags.append(Flag.TIMEOUT.value)
            result.error = f"timed out after {self.config.timeout_s:g} s ({stage.value} stage)"
        else:
            child.kill()
            exit_ = child.exit()
            how = exit_.describe() if exit_ else "died"
            result.flags.append(Flag.CRASH.value)
            result.error = _clip(f"the process {how} during the {stage.value} stage. {_stderr_tail(child)}")
        return None

    def _compile_step(self, result: VerifyResult, child: Child, deadline: float) -> bool:
        status = self._wait_step(result, child, "00_compile.json", Stage.COMPILE, deadline)
        if status is None:
            return False
        if not status.get("ok"):
            result.flags.append(_flag(status.get("flag"), Flag.IMPORT_ERROR))
            result.error = _clip(str(status.get("error")))
            return False
        result.compiled = True
        return True

    def _trial_steps(self, result: VerifyResult, child: Child, trials: list[TrialSpec], refs: dict[str, dict],
                     deadline: float) -> bool:
        for index, trial in enumerate(trials, start=1):
            stage = Stage.TINY if trial.stage == "tiny" else Stage.FULL
            base = protocol.step_name(index, trial.name)
            status = self._wait_step(result, child, base + ".json", stage, deadline)
            if status is None:
                return False
            problem = self._judge(status, child, base + ".pt", refs[trial.name], trial)
            child.verdict(f"{index:02d}", go=problem is None)
            if problem is not None:
                flag, message = problem
                result.stage = stage
                result.flags.append(flag)
                result.error = _clip(f"{trial.describe()}: {message}")
                return False
            if stage is Stage.TINY:
                result.tiny_correct = True
        result.correct = result.tiny_correct = True
        result.stage = Stage.DONE
        return True

    def _judge(self, status: dict, child: Child, payload_name: str, ref: dict,
               trial: TrialSpec) -> tuple[str, str] | None:
        if not status.get("ok"):
            return _flag(status.get("flag"), Flag.RUNTIME_ERROR), str(status.get("error"))
        if not isinstance(status.get("launches"), int) or status["launches"] < 1:
            return Flag.NO_TRITON_LAUNCH.value, "the forward pass launched no Triton kernel"
        payload = child.read_payload(payload_name, status.get("digest"))
        if payload is None:
            return Flag.TAMPERING.value, "the trial's outputs were changed after the harness wrote them"
        mismatch = compare_trial(ref, load_payload(payload), self.config.atol, self.config.rtol, trial.stage)
        return None if mismatch is None else (mismatch.flag.value, mismatch.message)

    def _judge_timed_outputs(self, child: Child, name: str, status: dict, refs: dict[str, dict]) -> str | None:
        """None when every captured timed call matches the reference for its input set; else the reason."""
        from tritonrl.verify.timing import judge_captures

        payload = child.read_payload(name.replace(".json", ".pt"), status.get("digest"))
        packed = load_payload(payload) if payload is not None else None
        if packed is None:
            return "the timed calls' outputs could not be read"

        def compare(actual: list, expected: dict) -> str | None:
            got = {"outputs": actual, "devices": expected["devices"], "inputs_after": expected["inputs_after"]}
            mismatch = compare_trial(expected, got, self.config.atol, self.config.rtol, "full")
            return None if mismatch is None else mismatch.message

        return judge_captures(packed, lambda k: refs[f"time{k}"], compare)

    def _policy(self):
        from tritonrl.verify.timing import TimingPolicy

        return TimingPolicy(max_warmup=max(1, self.config.warmup), warmup_ms=self.config.timing_warmup_ms,
                            max_trials=max(1, self.config.timed_trials),
                            min_trials=min(10, max(1, self.config.timed_trials)), rel_ci=self.config.timing_rel_ci,
                            budget_ms=self.config.timing_budget_ms)

    def _timing_step(self, result: VerifyResult, child: Child, trials: list[TrialSpec], refs: dict[str, dict],
                     deadline: float, ref_timing: dict | None, ref_cached: bool, lease: GpuLease | None) -> None:
        if not self.config.timing:
            return
        if not self._timed():
            result.flags.append(Flag.TIMING_UNAVAILABLE.value)
            return
        name = f"{len(trials) + 1:02d}_timing.json"
        outcome = run_exclusive(child, lease, "timing", name, deadline)
        if outcome == "timeout":  # the lock's wait is not counted; the child's own time ran out
            result.stage, result.flags = Stage.TIMING, [*result.flags, Flag.TIMEOUT.value]
            result.error = f"timed out after {self.config.timeout_s:g} s (timing stage)"
            return
        status = self._wait_step(result, child, name, Stage.TIMING, deadline)  # "exit": records the crash
        if status is None:
            return
        if not status.get("ok"):
            result.stage, result.error = Stage.TIMING, _clip(str(status.get("error")))
            return
        mismatch = self._judge_timed_outputs(child, name, status, refs)
        if mismatch is not None:  # the timed work was not the checked work: not correct at all
            result.stage, result.correct = Stage.TIMING, False
            result.flags.append(Flag.TIMING_MISMATCH.value)
            result.error = _clip(mismatch)
            return
        result.timing.update(timing_summary(status, ref_timing or {}, ref_cached))
        result.runtime_ms = float(status["timing"]["median_ms"])
        result.ref_runtime_ms = result.timing.get("ref_median_ms")
        if result.ref_runtime_ms and result.runtime_ms > 0:
            result.speedup = result.ref_runtime_ms / result.runtime_ms
            if result.speedup > self.config.suspicious_speedup:
                result.flags.append(Flag.SUSPICIOUS_SPEEDUP.value)
        interval = speedup_ci(ref_timing or {}, status)
        if interval is not None:
            result.timing["speedup_ci95"] = interval
        compile_ms = result.timing.get("ref_compile_ms")
        if compile_ms and result.runtime_ms > 0:
            result.timing["speedup_vs_compile"] = compile_ms / result.runtime_ms


def timing_sets(trials: list[TrialSpec], count: int) -> list[TrialSpec]:
    """The input sets timed calls rotate through: the timed trial's shapes and weights, other input values."""
    base = next(t for t in trials if t.stage == "full")
    return [TrialSpec(f"time{k}", "timing", base.task_key, base.source, base.seed, base.scale, base.dtype,
                      input_seed=base.seed + 1000 + k) for k in range(max(2, count))]


def speedup_ci(ref_timing: dict, status: dict) -> list[float] | None:
    """95% interval of the speedup from both sides' timed samples (``timing_stats.speedup_interval``)."""
    from tritonrl.verify.timing_stats import RUN_TO_RUN_REL, speedup_interval

    ref = (ref_timing.get("reference") or {}).get("samples_ms")
    cand = (status.get("timing") or {}).get("samples_ms")
    if not ref or not cand:
        return None
    _, low, high = speedup_interval(ref, cand, seed=0, systematic_rel=RUN_TO_RUN_REL)  # timed in other runs
    return [low, high]  # unrounded: a rounded end could exclude the point estimate (a 0.0005x speedup)


def reference_timing_key(trial: TrialSpec, gpu: str, config: VerifyConfig) -> str:
    """What a cached reference timing depends on: the trial's inputs, the GPU and the timing protocol."""
    return "|".join(map(str, (trial.cache_key("cuda", config.randomize_params), gpu, config.warmup,
                              config.timed_trials, config.timing_rel_ci, config.timing_budget_ms,
                              config.timing_sets, config.compile_baseline, "timing-v3")))


def timing_summary(status: dict, ref_timing: dict, ref_cached: bool) -> dict:
    """``VerifyResult.timing``: both sides' statistics, the GPU and its clocks, the reference's provenance."""
    device = status.get("device") or {}
    reference = ref_timing.get("reference") or {}
    summary = {
        "candidate": status["timing"], "reference": reference, "device": device,
        "gpu": device.get("gpu"), "sm_clock_mhz": device.get("sm_clock_mhz"),
        "mem_clock_mhz": device.get("mem_clock_mhz"),
        "peak_memory_bytes": device.get("trials_peak_memory_bytes"),
        "ref_median_ms": reference.get("median_ms"), "ref_cached": ref_cached,
    }
    if ref_timing.get("compile"):
        summary["ref_compile_ms"] = ref_timing["compile"]["median_ms"]
    if not ref_timing.get("ok", True) or not reference:
        summary["reference_error"] = ref_timing.get("error", "no reference timing")
    return summary


def load_payload(payload: bytes) -> dict | None:
    """A child's tensors, or None if they are not a safe, plain structure."""
    try:
        data = protocol.tensors_from_bytes(payload)
    except Exception:  # noqa: BLE001 - anything unloadable is rejected, whatever the reason
        return None
    return data if isinstance(data, dict) else None


def _reference_failure(child: Child, trial: TrialSpec, outcome: str, record: dict | None, limit_s: float,
                       memory_gb: float | None) -> str:
    """Why the reference stopped at ``trial``, in words: its exception, the time limit, or how it died."""
    if record is not None:
        return f"trial {trial.name}: {record.get('error')}"
    if outcome == "timeout":
        return f"trial {trial.name}: timed out after {limit_s:g} s computing the reference"
    child.kill()
    exit_ = child.exit()
    how = exit_.describe() if exit_ else "died"
    hint = f" (memory cap {memory_gb:g} GB: see --memory-gb)" if memory_gb and "signal 9" in how else ""
    return f"trial {trial.name}: the reference process {how}{hint}. {_stderr_tail(child)}".strip()


def run_exclusive(child: Child, lease: GpuLease | None, gate: str, name: str, deadline: float) -> str:
    """The parent's side of a timing gate ("ok", "exit" or "timeout", as ``Child.wait_for``).

    Once the child is at ``gate_<gate>`` (its GPU work synced), give up its shared lease, take the GPU's
    exclusive lock, say go and wait for its step file ``name``; the lock is released on the way out, whatever
    happened. Time spent waiting for the lock extends the deadline: queueing behind other candidates is not
    this candidate's time.
    """
    outcome = child.wait_for(f"gate_{gate}", deadline)
    if outcome != "ok":
        return outcome
    with lease.exclusive() if lease is not None else nullcontext(0.0) as waited:
        child.verdict(f"gate_{gate}")
        outcome = child.wait_for(name, deadline + waited)
        if outcome != "ok":  # a child past its limit may still run on the GPU: gone before the lock is
            _kill_and_reap(child)
        return outcome


def _kill_and_reap(child: Child, wait_s: float = 5.0) -> None:
    child.kill()
    deadline = time.monotonic() + wait_s
    while child.exit() is None and time.monotonic() < deadline:
        time.sleep(0.005)


def _first_full(trials: list[TrialSpec]) -> TrialSpec:
    """The base-seed full trial: its inputs are the ones the reference and the candidate are timed on."""
    return next(t for t in trials if t.stage == "full")


def _visible_gpus() -> list[str]:
    """GPU ids for the children's CUDA_VISIBLE_DEVICES: this process's own list when it has one (Ray actors,
    Slurm, a user's CUDA_VISIBLE_DEVICES=4,5), so slot k is the k-th GPU it may use, not physical GPU k."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible:
        return visible
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def _flag(value: object, default: Flag) -> str:
    try:
        return Flag(value).value
    except ValueError:
        return default.value


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


def _stderr_tail(child: Child, chars: int = 240) -> str:
    try:
        with open(child.path("stderr.txt"), errors="replace") as fh:
            text = fh.read()
    except OSError:
        return ""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-chars:] if lines else ""


def progress_bar(total: int, desc: str = "verify"):
    """A tqdm bar over candidates, or None where tqdm is not installed (the core does not require it)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="cand")
