"""The verifier: a staged funnel from model text to a ``VerifyResult``, cheapest stage first.

    from tritonrl.verify import Verifier, VerifyItem
    with Verifier() as verifier:
        result = verifier.verify(task, completion=text)
        results = verifier.verify_many([VerifyItem(task, completion=c) for c in completions], progress=True)

Stages: extract -> static checks -> compile (import, construct ModelNew) -> tiny shape -> full multi-input
trials -> timing (GPU only). Stops at the first failure. This module is the **parent**: it extracts, runs the
static checks, plans the trials, and never imports candidate code nor holds a tensor of it. Three kinds of
process do the rest (docs/verifier.md, "Processes and trust"):

- a **judge** per GPU (one on a CPU), trusted (``tritonrl.verify.judge``): references and inputs on its device,
  the comparison, the timing of the reference and the clock that bounds the candidate's;
- a **candidate child** per candidate (``tritonrl.verify.child``): isolated, read-only, unprivileged; it imports
  the candidate and answers its judge's calls through memory the judge maps into it (``tritonrl.verify.shared.arena``);
- the **zygote** (``tritonrl.verify.zygote``) that forks both, warm.

On a GPU, up to ``workers_per_gpu`` candidates share each GPU (their children import, compile and run trials at
once); each timing run has the GPU to itself (the judge's lock; docs/timing.md, "Sharing a GPU"). The first call
starts the zygote and the judges in the background (``start``; ``startup`` says what each step took).
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import queue
import secrets
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError, TaskError
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.parent.cross_check import CrossCheck
from tritonrl.verify.parent.hints import add_hints
from tritonrl.verify.parent.judge_client import JUDGE_START_S, JudgeClient, JudgeDied
from tritonrl.verify.parent.plan import strict_trials
from tritonrl.verify.parent.screen import screen
from tritonrl.verify.parent.warm import Started, WarmPool, write_code
from tritonrl.verify.parent.zygote_client import VerifierClosed, ZygoteClient, make_workdir
from tritonrl.verify.shared.directories import default_cache_dir, jobs_root
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.protections import PROTECTIONS
from tritonrl.verify.shared.stopwatch import Stopwatch
from tritonrl.verify.shared.verdict import MAX_ERROR_CHARS, Stage, VerifyResult, clip_words
from tritonrl.verify.static.objects import import_known_modules

if TYPE_CHECKING:
    from tritonrl.verify.parent.plan import TrialPlan

log = logging.getLogger(__name__)

FSIZE_LIMIT_BYTES = 4 << 30
JUDGE_SLACK_S = 600.0    # beyond the candidate's own time: references, lock waits, the judge's own work


@dataclass
class VerifyItem:
    task: KernelTask
    completion: str | None = None
    code: str | None = None


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"unknown device {device!r}; choose auto, cpu or cuda")
    if device == "cpu" or (device == "auto" and not _gpu_possible()):
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ConfigError("device 'cuda' requested but no CUDA GPU is available")
    return "cpu"


def _gpu_possible() -> bool:
    """False when this Linux machine has no GPU device node (NVIDIA's, ROCm's ``/dev/kfd``, WSL's ``/dev/dxg``):
    then torch could see no GPU either, and ``auto`` is the CPU without importing torch (seconds) to ask."""
    if not sys.platform.startswith("linux"):
        return True
    return bool(glob.glob("/dev/nvidia*")) or os.path.exists("/dev/kfd") or os.path.exists("/dev/dxg")


def zygote_env(device: str) -> dict[str, str]:
    """What the zygote (and so every judge and child) runs with beyond this process's environment. On the CPU
    the interpreter, with every GPU hidden: on a GPU host a CPU verifier's children must judge as they do on a
    machine without one (an active CUDA driver made each child build Triton's driver module and open a CUDA
    context first: 3.3 s a candidate on an H100 host, against 0.03 s)."""
    if device == "cpu":
        return {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    return {"TRITON_INTERPRET": "0"}


class Verifier:
    """Judges candidates for tasks; one warm zygote, one judge per GPU (one on a CPU), shared by all calls."""

    def __init__(self, config: VerifyConfig | None = None) -> None:
        self.config = config or VerifyConfig()
        import_known_modules()  # here, before any thread of this verifier imports them (see its docstring)
        self.device = resolve_device(self.config.device)
        if self.config.workers_per_gpu < 1:
            raise ConfigError(f"verify.workers_per_gpu must be at least 1, not {self.config.workers_per_gpu}")
        self.workers = self._count_workers()
        floor = strict_trials(self.config)
        if self.config.num_trials < floor:
            log.warning("verify.num_trials %d: strict mode runs its %d full trials (the base, and values and shapes "
                        "moved: each a defence); set multi_input: false for one trial", self.config.num_trials, floor)
        self._zygote = ZygoteClient(zygote_env(self.device))
        self.cache_dir = self.config.cache_dir or default_cache_dir()
        os.makedirs(self.cache_dir, mode=0o700, exist_ok=True)
        self._salt = secrets.token_hex(16)  # input seeds no candidate can know (tritonrl.verify.judge.references)
        self._slots: queue.Queue[str] = queue.Queue()
        per = self.config.workers_per_gpu if self.device == "cuda" else 1
        self._judge_ids = self._gpu_ids()[: self.workers] if self.device == "cuda" else ["cpu"]
        count = len(self._judge_ids) * per if self.device == "cuda" else self.workers
        for k in range(count):
            self._slots.put(self._judge_ids[k % len(self._judge_ids)])
        self._capacity = count
        self._per_judge = max(1, count // len(self._judge_ids))  # places per judge: children started ahead of each
        self._warm = WarmPool()
        self._in_use = {gpu: 0 for gpu in self._judge_ids}  # candidates being judged, per GPU
        self._filling = {gpu: False for gpu in self._judge_ids}  # a child being started ahead, per GPU
        self._places_lock = threading.Lock()
        self._judges: dict[str, JudgeClient] = {}
        self._judges_lock = threading.Lock()  # the dict; each GPU's judge starts under its own lock
        self._start_locks = {gpu: threading.Lock() for gpu in self._judge_ids}
        self._started = False
        self._closed = False  # set by close(): what fails in flight after it is not a verifier error
        self._start_threads: list[threading.Thread] = []
        self.sandbox_info: dict = {}
        self._sandbox_warned = False
        # The judge's build of Triton's driver module: read-only (and executable) in each GPU child's view, which binds
        # the directory when it forks, so it exists before the judge fills it.
        self._triton_template = os.path.join(jobs_root(), "triton-driver")
        os.makedirs(self._triton_template, mode=0o755, exist_ok=True)
        # What a GPU run cannot show, judged on the CPU for each candidate the GPU found correct (cross_check.py)
        self._cross_check = CrossCheck(self.config) if self.device == "cuda" and self.config.cpu_cross_check else None

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
        self.start()
        try:
            result = self._verify(task, code, completion)
            if self._cross_check is not None:
                result = self._cross_check.check(task, result)
        except ConfigError:
            raise  # the user's configuration: every item would fail the same way
        except Exception as exc:  # noqa: BLE001 - reported as the item's verdict and logged, never swallowed
            result = self._unjudged(task, code, exc)
        result.elapsed_s = round(time.monotonic() - start, 3)
        result.timing["span"] = [start, time.monotonic()]  # monotonic s: where this verdict sat in a batch
        if Flag.TIMEOUT.value in result.flags and result.error:
            result.error = _with_wall_time(result)
        return result

    def _unjudged(self, task: KernelTask, code: str | None, exc: Exception) -> VerifyResult:
        """The ``verifier_error`` verdict of an item the verifier failed on: logged with its traceback, unless the
        caller closed the verifier with the item in flight (Ctrl-C), which is no failure: then a quiet note."""
        if isinstance(exc, VerifierClosed) or self._closed:
            log.info("task %s not judged: the verifier was closed (%s)", getattr(task, "name", "?"), exc)
            error = "not judged: the verifier was closed"
        else:
            log.exception("verifier error on task %s", getattr(task, "name", "?"))
            error = _clip(f"verifier error ({type(exc).__name__}): {exc}")
        return VerifyResult(Stage.COMPILE, flags=[Flag.VERIFIER_ERROR.value], error=error, code=code)

    @property
    def concurrency(self) -> int:
        """Candidates in flight at once: one per CPU worker, or ``workers_per_gpu`` per GPU."""
        return self._capacity

    @property
    def _threads(self) -> int:
        """A batch's threads: one a place, twice that with the CPU cross-check (a thread's candidate is checked on
        the CPU after it gives its GPU place back, and the next candidate takes that place meanwhile)."""
        return self.concurrency * (2 if self._cross_check is not None else 1)

    def verify_many(self, items: list[VerifyItem], progress: bool = False) -> list[VerifyResult]:
        """Results in the order of ``items``; ``concurrency`` candidates run at a time."""
        from tritonrl.util.progress import ProgressLine  # tqdm, loaded when a verifier first judges a batch

        self.start()
        with ThreadPoolExecutor(max_workers=self._threads) as pool, \
                ProgressLine(len(items), "verify", enabled=progress) as line:
            futures = [pool.submit(self.verify, it.task, it.code, it.completion) for it in items]
            results = []
            for future in futures:
                results.append(future.result())
                line.update(results[-1])
        return results

    def verify_iter(self, items: list[VerifyItem], stop: Any = None):
        """``(index, result)`` for each item as it finishes (not in order). Once ``stop`` (anything with
        ``is_set()``, such as ``tritonrl.common.signals.StopRequest``) is raised, items not yet started are not
        started nor given; those running finish and are given: the stream drains. Closing the generator (or an
        exception in it, such as a second Ctrl-C) cancels the items not started and returns at once; ``close()``
        ends running ones."""
        self.start()
        pool = ThreadPoolExecutor(max_workers=self._threads)

        def one(item: VerifyItem) -> VerifyResult | None:
            if stop is not None and stop.is_set():
                return None
            return self.verify(item.task, item.code, item.completion)

        try:
            futures = {pool.submit(one, it): i for i, it in enumerate(items)}
            for future in as_completed(futures):
                if (result := future.result()) is not None:
                    yield futures[future], result
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def stats(self) -> dict[str, Any]:
        """Counters of every judge started so far (references computed, memory hits, timings measured ...)."""
        totals: dict[str, Any] = {}
        for judge in list(self._judges.values()):
            for key, value in judge.stats().items():
                totals[key] = totals.get(key, 0) + value
        return totals

    def close(self) -> None:
        """Stop everything: the judges, the zygote and, through it, every running candidate's process group.
        Items still in flight in other threads end as not judged (``verify``), quietly: their judge's end is the
        caller's doing, not a failure."""
        self._closed = True
        if self._cross_check is not None:
            self._cross_check.close()
        for started in self._warm.drain():
            started.child.finish()
        with self._judges_lock:
            judges, self._judges = list(self._judges.values()), {}
        for judge in judges:
            judge.close()
        self._zygote.close()

    def __enter__(self) -> Verifier:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------ the funnel
    def _verify(self, task: KernelTask, code: str | None, completion: str | None) -> VerifyResult:
        watch = Stopwatch()  # the parent's own steps (diagnosis): ``timing["parent_s"]``
        code, rejected = screen(self.config, code, completion, watch)
        if rejected is not None:
            return rejected
        result = VerifyResult(Stage.COMPILE, valid=True, code=code)

        # torch: not before a static verdict
        from tritonrl.verify.parent.plan import mark_cpu_size_limit, mark_declined

        @functools.cache
        def plan() -> TrialPlan:  # made while the child starts (``_judge``), once even if judged again
            with watch("plan"):
                return build_trials(task, self.config, self.device)

        with watch("slot"):  # waiting for one of the GPU's workers_per_gpu places
            gpu = self._slots.get()
        try:
            facts = self._judge(gpu, code, plan)
        except TaskError as exc:  # the task's fault, this item's verdict: a batch goes on
            result.flags.append(Flag.REFERENCE_ERROR.value)
            result.error = _clip(str(exc))
            return result
        finally:
            self._slots.put(gpu)
        trials = plan()
        result.flags += trials.flags  # reduced_shapes: judged at sizes the CPU can run (tritonrl.verify.parent.plan)
        self._apply(result, facts)
        result.timing["parent_s"] = watch.seconds()
        result = mark_declined(mark_cpu_size_limit(result, trials.oversize), trials)
        return add_hints(result, code, facts.get("relative_error"), task, self.config, self.device,
                         bool(trials.reduced))

    def _judge(self, gpu: str, code: str, plan: Callable[[], TrialPlan], retries: int = 1) -> dict[str, Any]:
        """One candidate through its child and its GPU's judge: the verdict's facts. The child is one started ahead
        (``warm_children``) or started now; either way its session with the judge is open before the trials are
        planned (``plan``, which may raise ``TaskError``): the child starts meanwhile, and on a cold start the plans
        (the first loads torch's meta-device machinery: seconds) no longer hold back every child. A judge that dies
        with the session in flight is restarted and the candidate judged again, once."""
        with self._judges_lock:
            current = self._judges.get(gpu)
        self._use(gpu, +1)
        try:
            started = self._warm.take(gpu, current)
            if started is not None and self.config.warm_spares and not self._closed:  # its place's next, now
                threading.Thread(target=self._fill_warm, args=(gpu, True), daemon=True,
                                 name=f"tritonrl-spare-{gpu}").start()
            return self._judged(started or self._start_child(gpu), code, plan, retries)
        finally:
            self._use(gpu, -1)  # the last of a batch: the GPU's places get children started ahead again

    def _judged(self, started: Started, code: str, plan: Callable[[], TrialPlan], retries: int) -> dict[str, Any]:
        gpu, child, judge = started.gpu, started.child, started.judge
        try:
            write_code(started.workdir, code)
            wait_s = 2 * self.config.timeout_s + JUDGE_SLACK_S
            try:
                trials = plan()
            except BaseException:
                judge.finish(started.key, None, wait_s)  # the session ends; its child is told bye
                raise
            facts = judge.finish(started.key, self._plan_message(trials), wait_s)
        except JudgeDied as exc:
            child.finish()
            if self._closed:  # close() ended the judge: nothing died, nothing is judged again
                raise VerifierClosed("the verifier was closed") from None
            self._drop_judge(gpu, judge)
            if retries > 0:
                log.warning("the verifier's judge %s died (%s): judging the candidate again", _judge_name(gpu), exc)
                return self._judge(gpu, code, plan, retries - 1)
            raise
        except BaseException:
            child.finish()
            raise
        facts["fork_span"] = [started.asked, started.forked, facts.pop("child_started_at", None) or None]
        facts["warm_child"] = started.warm
        try:
            if "verifier_error" in facts:
                log.error("verifier error in the judge: %s\n%s", facts["verifier_error"], facts.get("traceback", ""))
                raise RuntimeError(facts["verifier_error"])
            if "crash" in facts.get("flags", []):
                exit_ = child.wait_exit(5.0)
                how = exit_.describe() if exit_ else "died"
                facts["error"] = _clip(f"the process {how} during the {facts.get('stage')} stage. "
                                       f"{child.stderr_tail()}")
            if facts.get("isolation"):
                self.sandbox_info = facts["isolation"]
        finally:
            child.finish()
        return facts

    def _start_child(self, gpu: str) -> Started:
        """A candidate child forked for ``gpu`` and its session opened with the GPU's judge (started if need be):
        the child isolates itself while the judge starts, on a cold start, then waits for the judge's word to
        start CUDA (its turn), then for its candidate."""
        workdir = make_workdir()
        judge_end, child_end = socket.socketpair()
        seal = secrets.token_hex(16)  # the harness signs its messages with it; the judge checks them
        asked = time.monotonic()
        try:
            child = self._zygote.submit("candidate", workdir, {**self._child_spec(), "seal": seal},
                                        self._child_env(gpu), self._limits(), child_end)
        except BaseException:
            judge_end.close()
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        forked = time.monotonic()
        try:
            judge = self._judge_for(gpu)
            key = judge.open({**self._session_config(), "seal": seal}, judge_end)
        except BaseException:
            judge_end.close()
            child.finish()
            raise
        return Started(gpu, workdir, child, judge, key, asked, forked)

    def _use(self, gpu: str, change: int) -> None:
        with self._places_lock:
            self._in_use[gpu] += change
            idle = self._in_use[gpu] == 0
        if change < 0 and idle and self.config.warm_children and not self._closed:
            threading.Thread(target=self._fill_warm, args=(gpu,), daemon=True, name=f"tritonrl-warm-{gpu}").start()

    def _fill_warm(self, gpu: str, spare: bool = False) -> None:
        """A child started ahead for each of ``gpu``'s places (``warm_children``), while none of them judges a
        candidate: at ``start`` and whenever a batch ends, not while one runs (its children contend with the
        batch's for the host and the GPU's CUDA starts) unless ``spare`` (``warm_spares``: a candidate just took
        one). A failure is logged: candidates start their own."""
        while True:
            with self._places_lock:
                if not self.config.warm_children or self._closed or (self._in_use[gpu] and not spare) \
                        or self._filling[gpu] or self._warm.count(gpu) >= self._per_judge:
                    return
                self._filling[gpu] = True
            try:
                self._warm.put(self._start_child(gpu))
            except Exception as exc:  # noqa: BLE001 - an optimisation: candidates start their own children
                log.info("a candidate child could not be started ahead for %s (%s)", _judge_name(gpu), exc)
                return
            finally:
                with self._places_lock:
                    self._filling[gpu] = False
                if self._closed:  # close() raced it: nothing started ahead outlives the verifier
                    for started in self._warm.drain():
                        started.child.finish()

    def _judge_for(self, gpu: str) -> JudgeClient:
        with self._start_locks[gpu]:  # one start per GPU; GPUs start side by side
            with self._judges_lock:
                judge = self._judges.get(gpu)
            if judge is not None and judge.alive:
                return judge
            if judge is not None:
                judge.close()
            env = {"CUDA_VISIBLE_DEVICES": gpu} if self.device == "cuda" else {}
            spec = {"device": self.device, "randomize": self.config.randomize_params,
                    "reference_bytes": int(self.config.reference_memory_gb * (1 << 30)),
                    "cache_dir": self.cache_dir, "gpu": gpu, "triton_template": self._triton_template,
                    "launchers": self._launcher_seed()}
            judge = JudgeClient(self._zygote, gpu, spec, env, salt=self._salt)
            with self._judges_lock:
                self._judges[gpu] = judge
            return judge

    def start(self, wait: bool = False) -> None:
        """Start the zygote and every GPU's judge now, in background threads, instead of with the first candidates
        (``verify``, ``verify_many`` and ``verify_iter`` call it; a caller may call it early): the batch's first
        items make their plans and children meanwhile. Once per verifier; a start that fails is tried again, and
        reported, by the items themselves. ``wait``: return once the judges, the zygote's warm-ups and the plans'
        warm-up are done (or failed), and the children started ahead (``warm_children``) have started CUDA: a trainer
        starting its verifier before its first step."""
        if not self._started:
            self._started = True
            self._start_threads = self._start_in_background()
        if wait:
            for thread in self._start_threads:
                thread.join(JUDGE_START_S)
            if self._judges:  # a judge started, so did the zygote: its warm-ups follow the judge's fork
                self._zygote.wait_warm(JUDGE_START_S)
            self._warm.wait_ready(JUDGE_START_S)  # the children started ahead have their CUDA contexts

    def _start_in_background(self) -> list[threading.Thread]:
        def start_one(gpu: str) -> None:
            try:
                self._judge_for(gpu)
            except Exception as exc:  # noqa: BLE001 - each item starting the judge again raises it as its verdict
                log.info("background start of the judge for %s failed (%s); the items will retry", gpu, exc)
                return
            self._fill_warm(gpu)

        threads = [threading.Thread(target=start_one, args=(gpu,), daemon=True, name=f"tritonrl-judge-start-{gpu}")
                   for gpu in self._judge_ids]
        threads.append(threading.Thread(target=_warm_plans, daemon=True, name="tritonrl-warm-plans"))
        for thread in threads:
            thread.start()
        return threads

    @property
    def startup(self) -> dict[str, Any]:
        """Seconds the cold start took: the zygote's (``ready``, ``imports``, the candidates' warm-ups) and each
        judge's (``ready``, ``cuda``, ``driver_utils``); empty until started."""
        with self._judges_lock:
            judges = {gpu: judge.startup for gpu, judge in self._judges.items()}
        return {"zygote": dict(self._zygote.startup), "judges": judges}

    def _drop_judge(self, gpu: str, judge: JudgeClient | None = None) -> None:
        """End ``gpu``'s judge; given ``judge``, only if it is still the one in place: two candidates that lost the
        same judge both report it, and the later report must not end the judge the earlier one's retry started."""
        with self._judges_lock:
            if judge is None or self._judges.get(gpu) is judge:
                judge = self._judges.pop(gpu, None)
        if judge is not None:
            judge.close()

    def _session_config(self) -> dict[str, Any]:
        atol, rtol = self.config.tolerances()
        return {"config": {"timeout_s": self.config.timeout_s, "atol": atol, "rtol": rtol,
                           "randomize": self.config.randomize_params}}

    def _plan_message(self, trials: TrialPlan) -> dict[str, Any]:
        return {"trials": [t.to_dict() for t in trials], "probe": trials.probe.to_dict() if trials.probe else None,
                "timing": {"enabled": self._timed(), "policy": self._policy().as_dict(),
                           "compile": self.config.compile_baseline}}

    def _child_spec(self) -> dict[str, Any]:
        from tritonrl.verify.static.vocab import ALLOWED_IMPORTS

        return {"device": self.device, "poison": self.config.poison_memory, "strict": self.config.strict,
                "hold_hints": self.config.hold_hints,
                "allowed_imports": sorted(ALLOWED_IMPORTS), "sandbox": self.config.sandbox,
                "sandbox_required": self._required_protections(),
                "triton_seed": self._triton_template if self.device == "cuda" else None,
                "launcher_seed": self._triton_template if self._launcher_seed() else None}

    def _launcher_seed(self) -> bool:
        """Whether the judge builds Triton's launchers for its children (``judge/launchers.py``): on a GPU, asked
        for, and only where every child's files are surely isolated (strict sandbox, files isolated): a child that
        could write the seed could plant a launcher the next child loads."""
        return (self.device == "cuda" and self.config.judge_launchers and self.config.fs_isolation
                and self.config.sandbox == "strict")

    def _required_protections(self) -> list[str]:
        """Every protection of the sandbox, less the ones a switch turned off (files, network)."""
        off = {"filesystem"} if not self.config.fs_isolation else set()
        off |= {"network"} if not self.config.network_isolation else set()
        return [name for name in PROTECTIONS if name not in off]

    def _child_env(self, gpu: str) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": gpu} if self.device == "cuda" else {}

    def _apply(self, result: VerifyResult, facts: dict[str, Any]) -> None:
        """The judge's facts onto the verdict."""
        result.stage = Stage(facts.get("stage", "compile"))
        result.flags += [f for f in facts.get("flags", []) if f not in result.flags]
        result.error = facts.get("error")
        result.compiled = bool(facts.get("compiled"))
        result.tiny_correct = bool(facts.get("tiny_correct"))
        result.correct = bool(facts.get("correct")) and result.stage is Stage.DONE
        result.timing.update(facts.get("timing") or {})
        result.timing["stage_s"] = facts.get("stage_s") or {}
        if facts.get("gpu_lock_wait_s"):
            result.timing["stage_s"]["gpu_lock_wait"] = round(facts["gpu_lock_wait_s"], 4)
        if facts.get("gpu_lease"):
            result.timing["gpu_lease"] = facts["gpu_lease"]  # [mode, start, end] (monotonic s) of each hold
        if facts.get("gpu_shape"):
            result.timing["gpu_shape"] = facts["gpu_shape"]  # the CPU's probe at the GPU's shape (``child/probe.py``)
        if facts.get("span"):
            result.timing["session_span"] = facts["span"]  # [start, child ready, end] (monotonic s) in the judge
        if facts.get("fork_span"):
            result.timing["fork_span"] = facts["fork_span"]  # [fork asked, forked, the child's start] (monotonic s)
        if "warm_child" in facts:
            result.timing["warm_child"] = facts["warm_child"]  # its child was started ahead of it
        if facts.get("launchers_built"):
            result.timing["launchers_built"] = facts["launchers_built"]  # its child compiled them (the judge had none)
        self._apply_sandbox(result, facts.get("isolation") or {})
        if result.correct and self.config.timing and not self._timed():
            result.flags.append(Flag.TIMING_UNAVAILABLE.value)
        if facts.get("runtime_ms") is not None:
            result.runtime_ms = float(facts["runtime_ms"])
            result.ref_runtime_ms = facts.get("ref_runtime_ms")
            if result.ref_runtime_ms and result.runtime_ms > 0 and Flag.TIMING_UNRESOLVED.value not in result.flags:
                result.speedup = result.ref_runtime_ms / result.runtime_ms
                if result.speedup > self.config.suspicious_speedup:
                    result.flags.append(Flag.SUSPICIOUS_SPEEDUP.value)

    def _apply_sandbox(self, result: VerifyResult, iso: dict[str, Any]) -> None:
        """Which protections the candidate's child had (``timing["sandbox"]``); a missing one is a flag: the
        child refused to run the candidate (strict: no verdict) or ran it anyway (best effort)."""
        if not iso:
            return
        result.timing["sandbox"] = {name: all(iso.get(f) for f in fields) for name, fields in PROTECTIONS.items()}
        missing = [n for n in self._required_protections() if not result.timing["sandbox"][n]]
        if not missing:
            return
        result.timing["isolation"] = iso
        if Flag.SANDBOX_UNAVAILABLE.value in result.flags:
            result.flags.append(Flag.VERIFIER_ERROR.value)
            if not self._sandbox_warned:
                self._sandbox_warned = True
                log.error("candidates are not judged: %s", result.error)
        elif self.config.sandbox == "best_effort":
            result.flags.append(Flag.SANDBOX_INCOMPLETE.value)
            if not self._sandbox_warned:
                self._sandbox_warned = True
                log.warning("judging without the sandbox's %s (verify.sandbox: best_effort)", ", ".join(missing))

    def _timed(self) -> bool:
        """GPU only. ``TRITONRL_TIMING_ON_CPU=1`` is a test seam: the same checked protocol, wall clock, on CPU."""
        return self.config.timing and (self.device == "cuda" or os.environ.get("TRITONRL_TIMING_ON_CPU") == "1")

    def _limits(self) -> dict:
        memory = self.config.sandbox_memory_gb
        threads = 1 if self.device == "cuda" else max(1, (os.cpu_count() or 1) // self.concurrency)
        return {
            "as_bytes": int(memory * (1 << 30)) if memory and self.device == "cpu" else None,
            "cpu_s": int(self.config.timeout_s * 2 * max(1, threads)) + 30,  # backstop; the judge's clock rules
            "fsize_bytes": FSIZE_LIMIT_BYTES,
            "threads": threads,
            "network_isolation": self.config.network_isolation,
            "fs_isolation": self.config.fs_isolation,
        }

    def _policy(self):
        from tritonrl.verify.shared.timing_protocol import TimingPolicy

        return TimingPolicy(max_warmup=max(1, self.config.warmup), warmup_ms=self.config.timing_warmup_ms,
                            max_trials=max(1, self.config.timed_trials),
                            min_trials=min(10, max(1, self.config.timed_trials)), rel_ci=self.config.timing_rel_ci,
                            budget_ms=self.config.timing_budget_ms)


def build_trials(task: KernelTask, config: VerifyConfig, device: str) -> TrialPlan:
    """``tritonrl.verify.parent.plan.build_trials``, whose module (it imports torch) loads on first use: a verdict
    of the static checks waits for neither."""
    from tritonrl.verify.parent import plan

    return plan.build_trials(task, config, device)


def _warm_plans() -> None:
    """What the items' plans need loaded (``variants.warm_meta``), while the zygote starts. An optimisation: a
    failure leaves the first plan to load it."""
    from tritonrl.tasks.variants import warm_meta

    try:
        warm_meta()
    except Exception as exc:  # noqa: BLE001
        log.info("meta-device warm-up skipped (%s: %s)", type(exc).__name__, exc)


def _with_wall_time(result: VerifyResult) -> str:
    """A timeout's error with the call's own clock on its first line: the judge charges the candidate only its
    child's time (``stage_s["charged"]``), so a call that took longer says where the rest went: the judge's
    references, what came before the session (starting the verifier's processes, the plan), the rest (the end)."""
    first, *rest = result.error.split("\n")
    stage_s, total = result.timing.get("stage_s") or {}, result.elapsed_s or 0.0
    charged = sum(v for v in (stage_s.get("charged") or {}).values() if isinstance(v, (int, float)))
    session, call = result.timing.get("session_span") or [None], result.timing.get("span") or [None]
    before = session[0] - call[0] if isinstance(session[0], float) and isinstance(call[0], float) else 0.0
    parts = [("charged to the candidate", charged), ("the judge's references", stage_s.get("reference") or 0.0),
             ("starting the verifier's processes and the plan", before)]
    parts.append(("the rest", total - sum(seconds for _, seconds in parts)))
    shown = ", ".join(f"{seconds:.1f} s {what}" for what, seconds in parts if seconds >= 0.05)
    return "\n".join([f"{first}; this call took {total:.1f} s ({shown})", *rest])


def _judge_name(gpu: str) -> str:
    """How messages name a judge: ``for GPU 0``, or ``on the CPU`` (whose judge's id is "cpu")."""
    return "on the CPU" if gpu == "cpu" else f"for GPU {gpu}"


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
    return clip_words(text, MAX_ERROR_CHARS)
