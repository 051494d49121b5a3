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

import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any

from tritonrl.errors import TaskError
from tritonrl.verify.judge.compare import Mismatch, compare_outputs, inputs_changed
from tritonrl.verify.judge.failures import ChildGone, ChildSilent, Failed, Unplanned, number, text
from tritonrl.verify.judge.launchers import PER_SESSION
from tritonrl.verify.judge.layout import Described, Layout, compare_described
from tritonrl.verify.judge.references import Reference
from tritonrl.verify.judge.timing_run import run_timing
from tritonrl.verify.shared import wire
from tritonrl.verify.shared.arena import Arena, fingerprint
from tritonrl.verify.shared.device_memory import out_of_memory, short_beside_others
from tritonrl.verify.shared.trial import TrialSpec


class Session:
    """``message``: the seal and config. The trials and timing come later, through ``plans`` (a queue the judge's
    server fills with the parent's plan message, or None when the parent is gone)."""

    def __init__(self, judge: Any, message: dict[str, Any], sock: Any, plans: queue.Queue,
                 on_ready: Callable[[], None] | None = None) -> None:
        self.judge, self.sock, self.plans, self.on_ready = judge, sock, plans, on_ready
        self.seal = wire.Seal(bytes.fromhex(message["seal"]))  # every message of the child's must verify
        self.trials: list[TrialSpec] = []
        self.config = message["config"]
        self.timing_spec: dict[str, Any] = {}
        self.probe: TrialSpec | None = None  # the GPU's shape, checked on the meta device (CPU only: ``gpu_shape``)
        self.facts: dict[str, Any] = {"stage": "compile", "flags": [], "error": None, "compiled": False,
                                      "tiny_correct": False, "correct": False, "timing": {}, "stage_s": {}}
        self.budget_s = float(self.config["timeout_s"])  # the child's own time: waits for its answers
        self.charged: dict[str, float] = {}  # of it, per stage (the timeout's message)
        self.trial_name = ""  # the trial under way (the timeout's message)
        self.arena: Arena | None = None
        self.lease = judge.lease()
        self.launcher_room = PER_SESSION  # of the launchers this child reports, how many more the judge builds

    # ------------------------------------------------------------ the whole session
    def run(self) -> dict[str, Any]:
        stage = "compile"
        began = time.monotonic()
        span = self.facts["span"] = [began, None, None]  # [start, the child ready, end] (monotonic s): diagnosis
        # The plan and the references, taken while the child starts CUDA: they wait on the parent and the GPU's lease.
        early = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-early")
        try:
            self.recv(stage)  # hello: the child is isolated and watched, and waits to start CUDA
            planned = early.submit(self._plan_and_references)
            ready = self.start_cuda(stage)
            span[1] = time.monotonic()
            if self.on_ready is not None:
                self.on_ready()
            self.facts["stage_s"]["child_start"] = _seconds(ready.get("startup_s"))  # its claim: diagnosis only
            self.facts["child_started_at"] = number(ready.get("started_at"))  # also a claim, also diagnosis
            self.facts["isolation"] = ready.get("isolation") or {}
            iso = self.facts["isolation"]
            self.judge.timings.trust_disk(bool(iso.get("fs_isolated") and iso.get("readonly")))
            refs = planned.result()  # raises what stopped them (Unplanned, TaskError) here
            self.compile()
            stage = "full"
            if self.trials:
                self.correctness(refs)
            else:  # a plan the parent declined whole (``plan.mark_declined``): the import was all there was to judge
                self.facts["stage"] = "done"
            if self.timing_spec.get("enabled"):
                stage = "timing"
                self.timing(refs)
        except Failed as failed:
            self.fail(failed.stage, failed.flag, failed.error)
        except Unplanned:
            self.fail(stage, None, "not judged: the verifier ended the session before its trials")
        except ChildSilent as silent:
            self.fail(str(silent), "timeout", self.timeout_message(str(silent)))
        except ChildGone as gone:
            self.fail(str(gone), "crash", f"the process died during the {gone} stage")
        except wire.BadMessage as exc:
            self.fail(stage, "tampering", f"the candidate's process sent a malformed message: {exc}")
        except TaskError as exc:
            self.facts["flags"].append("reference_error")
            self.facts["error"] = str(exc)
        finally:
            early.shutdown(wait=True)  # nothing of it outlives the session (the plan always comes: a plan or a cancel)
            self.close()
            span[2] = time.monotonic()
            self.facts["stage_s"]["charged"] = {name: round(s, 4) for name, s in self.charged.items()}
        return self.facts

    def start_cuda(self, stage: str) -> dict[str, Any]:
        """The child's CUDA start at its turn (``Judge.cuda_starts``: a few children of a GPU at a time). The wait for
        the turn is the batch's, not the candidate's: it is recorded (``stage_s["start_wait"]``) and not charged to
        the child's budget (charged, it timed out honest candidates of a loaded batch: 9-14 s of a 20 s limit spent
        waiting, docs/benchmarks-history.md, "Four H200s again"); the start itself is (a child started ahead of its candidate,
        ``VerifyConfig.warm_children``, is charged the same: only its answers' waits count, not the wait for its
        plan). A batch still ends in a known time: each start in front is bounded by its own budget."""
        waited = time.monotonic()
        with self.judge.cuda_starts:
            self.facts["stage_s"]["start_wait"] = round(time.monotonic() - waited, 4)
            self.send({"op": "start"})
            return self.recv(stage)

    def _plan_and_references(self) -> dict[str, Reference]:
        self.take_plan()
        return self.references()

    def take_plan(self) -> None:
        """The trials and timing, which the parent planned while the child started (``Verifier._judge``)."""
        start = time.monotonic()
        plan = self.plans.get()
        self.facts["stage_s"]["plan_wait"] = round(time.monotonic() - start, 4)
        if plan is None or plan.get("cancel"):
            raise Unplanned
        self.trials = [TrialSpec(**t) for t in plan["trials"]]
        self.timing_spec = plan.get("timing") or {}
        self.probe = TrialSpec(**plan["probe"]) if plan.get("probe") else None

    def timeout_message(self, stage: str) -> str:
        """What ran out, in the clock's numbers: the candidate's own time (its waits for the child's answers, the
        only time charged to it) by stage, and where it stopped. The judge's own work (references, the wait for
        a CUDA start) is not charged: the parent adds the call's wall time (``Verifier.verify``)."""
        spent = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.charged.items())
        where = f"{stage} stage, {self.trial_name}" if self.trial_name and stage != "compile" else f"{stage} stage"
        return (f"timed out in the {where}: the candidate's process used its whole {self.config['timeout_s']:g} s "
                f"limit ({spent})")

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
        with self.shared():  # nothing of ours may still use the arena, and no timing run is disturbed
            if self.arena is not None:
                self.arena.close()
            self.judge.store.yield_memory()  # what this candidate's references and timed inputs used, back

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
            message, _ = wire.recv(self.sock, timeout_s=max(0.0, self.budget_s), seal=self.seal, keep_fds=False)
        except wire.TimedOut:
            raise ChildSilent(stage) from None
        except (wire.Closed, OSError):
            raise ChildGone(stage) from None
        finally:
            spent = time.monotonic() - start
            self.budget_s -= spent
            self.charged[stage] = self.charged.get(stage, 0.0) + spent
        built = message.pop("launchers", None)  # launchers the child's helper built: the judge builds them too
        if built is not None:
            self.learn_launchers(built)
        return message

    def learn_launchers(self, built: Any) -> None:
        """A child's report of the launchers its helper had to build (a claim: ``LauncherSeed`` checks each and
        takes ``PER_SESSION`` a session at most) handed to the judge's seed; their count is diagnosis."""
        count = len(built) if isinstance(built, list) else 0
        self.facts["launchers_built"] = self.facts.get("launchers_built", 0) + count
        seed = getattr(self.judge, "launchers", None)
        if seed is not None:
            self.launcher_room -= seed.learn(built, self.launcher_room)

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
        """The trials' references: from memory without a lease when another session made them (a lease would wait
        behind every queued timing run), else made here under the shared lease."""
        start = time.monotonic()
        refs = self.judge.store.held(self.trials)
        if refs is None:
            refs = self.gpu_unit("full", "references", lambda: self.judge.store.get(self.trials))
        self.facts["stage_s"]["reference"] = round(time.monotonic() - start, 4)
        return refs

    def compile(self) -> None:
        start = time.monotonic()
        with self.shared():
            reply = self.call({"op": "import"}, "compile")
        self.facts["stage_s"]["import"] = round(time.monotonic() - start, 4)
        if not reply.get("ok"):
            raise Failed("compile", text(reply.get("flag"), "import_error"), text(reply.get("error"), "?"))
        # compiled once ModelNew is also constructed: the first trial's build, still the compile stage

    # ------------------------------------------------------------ correctness
    def correctness(self, refs: dict[str, Reference]) -> None:
        start = time.monotonic()
        layouts = {t.name: Layout.of(refs[t.name]) for t in self.trials}
        nbytes = max(layout.nbytes for layout in layouts.values())
        self.arena = self.gpu_unit("tiny", "arena", lambda: Arena.create(nbytes, self.judge.device))
        self.call_arena()
        for index, trial in enumerate(self.trials):
            stage = "tiny" if trial.stage == "tiny" else "full"
            self.trial_name = f"trial {trial.name}"
            ref, layout = refs[trial.name], layouts[trial.name]
            building = "compile" if index == 0 else stage  # the first construction is the compile stage's
            again = index == 0  # the first trial's model is called twice (``trial_once``)
            steps, built, reply, problem = self.gpu_unit(
                stage, trial.name, partial(self.trial_once, trial, ref, layout, stage, building, again),
                retry=partial(self.retry_trial, trial, stage, building, again), short=self.child_short)
            if not built.get("ok"):
                flag = text(built.get("flag"), "init_error")
                raise Failed(building, flag, f"{trial.describe()}: {text(built.get('error'), '?')}")
            self.facts["stage_s"].setdefault("trials", []).append(
                {"trial": trial.name, "build": round(steps[1] - steps[0], 4), "write": round(steps[2] - steps[1], 4),
                 "run": round(steps[3] - steps[2], 4), "check": round(steps[4] - steps[3], 4),
                 "forward": round(number(reply.get("elapsed_s")), 4), "watch": round(number(reply.get("judge_s")), 4),
                 "deliver": round(number(reply.get("deliver_s")), 4), "released": reply.get("released") is True})
            if index == 0:
                self.facts["stage_s"]["jit_first_trial"] = round(float(number(reply.get("elapsed_s"))), 4)
            if problem is not None:
                if problem.relative is not None:  # for the parent's reduced-precision hint (TF32)
                    self.facts["relative_error"] = problem.relative
                raise Failed(stage, problem.flag.value, f"{trial.describe()}: {problem.message}")
            if stage == "tiny":
                self.facts["tiny_correct"] = True
        if self.probe is not None:
            self.gpu_shape(self.probe)
        self.trial_name = ""
        self.facts.update(correct=True, tiny_correct=True, stage="done")
        self.facts["stage_s"]["correctness"] = round(time.monotonic() - start, 4)

    def gpu_shape(self, trial: TrialSpec) -> None:
        """The forward once more at the shape a GPU judges (a bundled task's timing shape, a KernelBench task as
        written), every tensor on the meta device in the child (``child/probe.py``): a launch a GPU refuses there
        (its grid, its block, its shared memory) fails the candidate; what could not be checked is said in
        ``facts["gpu_shape"]``, not failed."""
        self.trial_name = f"trial {trial.name}"
        start = time.monotonic()
        try:
            init, inputs = self.judge.store.shapes(trial)
        except TaskError as exc:
            self.facts["gpu_shape"] = {"unchecked": str(exc)[:300]}
            return
        layout = Layout()
        reply = self.call({"op": "probe", "seed": trial.seed, "dtype": trial.dtype,
                           "init": [layout.describe(v) for v in init],
                           "inputs": [layout.describe(v) for v in inputs]}, "full")
        self.facts["stage_s"]["gpu_shape"] = round(time.monotonic() - start, 4)
        shapes = ", ".join("x".join(map(str, v.shape)) for v in inputs if hasattr(v, "shape"))
        if not reply.get("ok"):
            raise Failed("full", text(reply.get("flag"), "interpreter_only"),
                         f"at the shape a GPU judges ({trial.task_key}: inputs {shapes}): {text(reply.get('error'), '?')}")
        unchecked = reply.get("unchecked")
        self.facts["gpu_shape"] = {"inputs": shapes, "launches": int(number(reply.get("launches"))),
                                   **({"unchecked": text(unchecked, "?")[:300]} if unchecked else {})}

    def trial_once(self, trial: TrialSpec, ref: Reference, layout: Layout, stage: str, building: str,
                   again: bool = False) -> tuple[list[float], dict, dict, Mismatch | None]:
        """One trial: the model built, the forward run, its outputs judged. The steps' instants, both replies (the
        run's empty when the build failed) and what was wrong. After a full trial the child gives its allocator's
        blocks back. Between the build and the forward the whole arena is poisoned before the call's values are
        written (``poison_arena``): nothing a construction, an earlier call or a finalizer parked there is read
        as the judge's input. ``again``: a model that passed is called once more (``call_again``)."""
        steps = [time.monotonic()]
        built = self.call(self.build_message(trial, layout, ref), building)
        steps.append(time.monotonic())
        if not built.get("ok"):
            return steps, built, {}, None
        self.facts["compiled"] = True  # whatever the forward does next (a hang, a crash), the model was built
        reply, problem, marks = self.call_once(ref, layout, stage)
        if problem is None and again:
            problem = self.call_again(trial, stage)
            marks[-1] = time.monotonic()  # the check's time holds the second call
        return steps + marks, built, reply, problem

    def call_once(self, ref: Reference, layout: Layout, stage: str) -> tuple[dict, Mismatch | None, list[float]]:
        """One forward of the built model on ``ref``'s inputs, written into the poisoned arena; its reply, its
        verdict, and the instants the write, the run and the check ended."""
        self.poison_arena()
        layout.write(self.arena, ref.inputs, self.judge.device)
        marks = [time.monotonic()]
        reply = self.call({"op": "run", "inputs": layout.inputs, "outputs": layout.outputs,
                           "release": stage == "full"}, stage)
        marks.append(time.monotonic())
        problem = self.judge_call(reply, ref, layout, stage)
        marks.append(time.monotonic())
        return reply, problem, marks

    def call_again(self, trial: TrialSpec, stage: str) -> Mismatch | None:
        """The same model called a second time, on inputs no call was handed before (a secret seed of their own):
        state kept between calls shows, as it would in use and in the timed calls (a workspace zeroed only when it
        was made, a parameter folded in place by every forward, an answer kept from the first call: the
        thirty-second red team's ``r32_*``). The reference is called once on them, as every timed call's is."""
        ref = self.judge.store.fresh(trial, SECOND_CALL)
        _, problem, _ = self.call_once(ref, Layout.of(ref), stage)
        if problem is not None:
            problem.message = f"called a second time on new inputs (the first call was right): {problem.message}"
        return problem

    def gpu_unit(self, stage: str, name: str, unit: Callable[[], Any], retry: Callable[[], Any] | None = None,
                 short: Callable[[Any], bool] = lambda result: False) -> Any:
        """``unit()`` (GPU work: the judge's own or its child's) under the stage's lease (``lease_for``). On a GPU, a
        unit that ran out of device memory beside other candidates' work runs once more with the GPU to itself,
        after the judge's unused blocks went back; what it does there is the verdict's. Ran out, on evidence the
        judge trusts only (``shared.device_memory``): its own allocation raised, or ``short(result)`` (the child's
        allocator reported a refusal the device alone would not have made); never the child's exception or its
        text. ``retry`` runs instead of ``unit`` (a trial: on fresh inputs, ``retry_trial``). On a CPU nothing is
        retried: no device is shared with other candidates there. ``timing["memory_retries"]`` names each
        retried unit."""
        on_gpu = str(self.judge.device).startswith("cuda")
        with self.lease_for(stage):
            try:
                result, ran_out = unit(), False
            except Exception as exc:  # noqa: BLE001 - only the device running out of memory is retried
                if not (on_gpu and out_of_memory(exc)):
                    raise
                result, ran_out = None, True
        if not on_gpu or not (ran_out or short(result)):
            return result
        self.facts["timing"].setdefault("memory_retries", []).append(name)
        with self.exclusive():
            self.judge.store.release_cache()
            return (retry or unit)()

    def child_short(self, result: tuple[list[float], dict, dict, Any]) -> bool:
        """Whether a trial's build or forward ran out of device memory because of others, from the reports of the
        child's allocator (``child/shortage.py``) and the device's size as the judge measures it."""
        import torch

        total = torch.cuda.mem_get_info(self.judge.device)[1]
        return any(short_beside_others(reply.get("device_short"), total) for reply in result[1:3])

    def retry_trial(self, trial: TrialSpec, stage: str, building: str,
                    again: bool = False) -> tuple[list[float], dict, dict, Any]:
        """A trial again, after the child ran out beside others: on inputs no call was handed before (a secret
        seed of their own), with every byte of the arena poisoned first, so nothing the failed attempt saw or left
        (its inputs, what it parked in the arena) serves the retry; the failed forward was judged already."""
        ref = self.judge.store.fresh(trial, RETRY_CALL, state=True)
        self.poison_arena()
        return self.trial_once(trial, ref, Layout.of(ref), stage, building, again)

    def poison_arena(self) -> None:
        """Every byte of the arena ``POISON_BYTE`` (NaN as any float). The child sees the arena as the judge's
        memory, input whatever it holds (``Origins.trust(pin=True)``): a construction that wrote torch's table of
        the op into it had the table read as input data, gathered by a kernel credited as its own work
        (``r12_arena_table_from_init``)."""
        import torch

        self.arena.tensor(0, torch.uint8, [self.arena.nbytes]).fill_(POISON_BYTE)

    def call_arena(self) -> None:
        self.send({"op": "arena", "nbytes": self.arena.nbytes}, [self.arena.fd])
        if not self.recv("compile").get("ok"):
            raise Failed("compile", "crash", "the child could not map the judge's memory")

    def build_message(self, trial: TrialSpec, layout: Layout, ref: Reference) -> dict[str, Any]:
        return {"op": "build", "seed": trial.seed, "init": layout.init, "randomize": self.config["randomize"],
                "dtype": trial.dtype, "state": ref.state}

    def judge_call(self, reply: dict, ref: Reference, layout: Layout, stage: str) -> Mismatch | None:
        """Whether one call's reply, and the outputs it left in the arena, are the reference's."""
        from tritonrl.verify.shared.flags import Flag

        if not reply.get("ok"):
            return Mismatch(_flag(reply.get("flag"), Flag.RUNTIME_ERROR), text(reply.get("error"), "?"))
        launches = reply.get("launches")
        if not isinstance(launches, int) or launches < 1:
            return Mismatch(Flag.NO_TRITON_LAUNCH, "the forward pass launched no Triton kernel")
        return self.check_outputs(reply.get("outputs"), ref, layout, stage)

    def check_outputs(self, metas: Any, ref: Reference, layout: Layout, stage: str) -> Mismatch | None:
        from tritonrl.verify.shared.flags import Flag

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
            if isinstance(value, Described):
                return compare_described(i, value, ref.outputs[i])
        devices = [m.get("device") for m in metas]
        return compare_outputs(ref.outputs, actual, devices, self.config["atol"], self.config["rtol"], stage,
                               ref.sides)

    def output(self, i: int, meta: dict, layout: Layout) -> Any:
        """Output ``i`` as the arena holds it, or what the child said came instead (a type name, a shape ...)."""
        from tritonrl.verify.shared.flags import Flag

        if meta.get("type") != "torch.Tensor":
            return text(meta.get("type"), "an unknown object")
        if not meta.get("copied"):
            return Described(meta)
        value = layout.output(self.arena, i)
        if fingerprint(value) != meta.get("fingerprint"):
            return Mismatch(Flag.TAMPERING, f"output {i} changed after the forward pass returned it")
        return value

    # ------------------------------------------------------------ timing
    def timing(self, refs: dict[str, Reference]) -> None:
        run_timing(self, refs)


RETRY_CALL = "memory_retry"  # the retry's inputs: their own secret seed (``references.input_seed``)
SECOND_CALL = "second_call"  # the first trial's second call's, too
POISON_BYTE = 0xFF  # the arena before each call's values are written: NaN as any float


def _flag(value: Any, default: Any) -> Any:
    from tritonrl.verify.shared.flags import Flag

    try:
        return Flag(value)
    except ValueError:
        return default


def _seconds(claimed: Any) -> dict[str, float]:
    """A child's claimed per-step seconds, kept only where they are numbers (shown, never decided on)."""
    if not isinstance(claimed, dict):
        return {}
    return {str(k)[:40]: float(v) for k, v in list(claimed.items())[:16]
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


@contextmanager
def _no_lease():
    yield
