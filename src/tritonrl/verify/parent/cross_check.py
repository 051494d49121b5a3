"""A GPU verdict of *correct*, checked once more on the CPU interpreter for what a GPU run cannot show.

    verify.cpu_cross_check: true     # the default; GPU verdicts only

A GPU judges the schedule its hardware ran. A kernel whose programs depend on each other without an order (the last
program of a row reads the other programs' partial sums, with no atomic between them) is right whenever the blocks
happen to finish in grid order, as they did at every trial on an H200 (the thirty-fifth red team's `a12`-`a14`);
a kernel that reads memory nothing wrote, or past the end of a tensor into the allocator's slack, reads whatever is
there, often harmlessly. The CPU judge sees all three: its interpreter runs programs in a secret order and records
every load, store and atomic (``tritonrl.verify.child.fidelity``, ``bounds``).

So each candidate a GPU judged correct is judged again on the CPU (a second ``Verifier`` on the CPU, started on
first use, with the CPU's trials; the GPU judge's own trials are the verdict's evidence of values). Only the CPU's
*memory evidence* overturns the GPU's verdict: a ``data_race``, a read of memory nothing wrote, an access outside
every tensor of the launch. A CPU run that could not finish (a construct the interpreter cannot run, a time-out
there) has looked for none of them, and a race can hide behind either: one identity move in inline assembly the
interpreter could not run (the thirty-sixth red team's ``a02``), a kernel made slow for the interpreter alone
(``a08``). Such a verdict is rejected with flag ``cross_check_unfinished`` (``verify.cross_check_unfinished:
stand`` lets the GPU's verdict stand instead); the check's CPU judge gets twice the GPU judge's time, so that a
slow honest kernel on a busy host is not cut short. Every other CPU outcome (a wrong value: the GPU's trials are
the evidence of values; a task the CPU declines) is recorded in ``timing["cpu_cross_check"]``, and the GPU's
verdict stands. The check never turns a rejection into an acceptance.

What it cannot do (docs/verifier.md): a candidate that runs another kernel when it finds itself on a CPU (``if
x.is_cuda:``) or at the GPU's larger shapes shows the CPU a kernel that is not the GPU's.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from tritonrl.verify.shared.flags import OUTSIDE_LAUNCH, UNSET_READ, Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from tritonrl.config import VerifyConfig
    from tritonrl.tasks.model import KernelTask
    from tritonrl.verify.parent.verifier import Verifier


def memory_evidence(cpu: VerifyResult) -> bool:
    """Whether the CPU's verdict found what a GPU run cannot show: a race between programs or lanes, a read of
    memory nothing wrote, an access outside every tensor of the launch."""
    if cpu.correct is not False:
        return False
    if Flag.DATA_RACE.value in cpu.flags:
        return True
    return Flag.RUNTIME_ERROR.value in cpu.flags and any(p in (cpu.error or "") for p in (UNSET_READ, OUTSIDE_LAUNCH))


def unfinished(cpu: VerifyResult) -> str | None:
    """Why the CPU's run ended, through the candidate, before it could look for memory evidence (its flag), or
    None. A time-out at task sizes over the CPU's budget that no reduction fits (``cpu_size_limit``) is the task's:
    honest kernels time out there too, and the GPU's verdict stands."""
    if cpu.correct is not False or Flag.CPU_SIZE_LIMIT.value in cpu.flags:
        return None
    return next((f.value for f in (Flag.CPU_UNSUPPORTED, Flag.TIMEOUT) if f.value in cpu.flags), None)


def cross_check_config(config: VerifyConfig) -> VerifyConfig:
    """The CPU judge's settings: the GPU judge's, on the CPU, no timing, no self-check, twice its time; half the machine's cores
    (the GPU's candidates and training share them); hints not held (``hold_hints``: a false hint that stopped the
    kernel first would hide its races, and the GPU has judged what the hint did to the values). Every trial the
    CPU judge runs, not one: a race on a path only other trial shapes take was missed with one (the thirty-sixth
    red team's ``a04``)."""
    return dataclasses.replace(
        config, device="cpu", timing=False, known_good=False, backend="local", timeout_s=2 * config.timeout_s,
        workers=max(1, (os.cpu_count() or 2) // 2), cpu_cross_check=False, hold_hints=False)


def overturned(gpu: VerifyResult, cpu: VerifyResult) -> VerifyResult:
    """``gpu``'s verdict with the CPU's evidence: not correct, the CPU's flag and error."""
    flag = Flag.DATA_RACE.value if Flag.DATA_RACE.value in cpu.flags else Flag.RUNTIME_ERROR.value
    return _rejected(gpu, flag, f"the CPU cross-check (programs in another order, every access recorded): {cpu.error}")


def left_unchecked(gpu: VerifyResult, cpu: VerifyResult, why: str) -> VerifyResult:
    """``gpu``'s verdict when its CPU cross-check ended early (``why``: the CPU's flag): not correct."""
    first = (cpu.error or "").split("\n")[0][:300]
    return _rejected(gpu, Flag.CROSS_CHECK_UNFINISHED.value,
                     f"the CPU cross-check could not finish ({why}: {first}), so the races and stray reads a GPU run "
                     "cannot show were never looked for (verify.cross_check_unfinished: stand lets the GPU's verdict "
                     "stand)")


def _rejected(gpu: VerifyResult, flag: str, error: str) -> VerifyResult:
    gpu.correct = False
    gpu.stage = Stage.FULL if gpu.stage in (Stage.TIMING, Stage.DONE) else gpu.stage
    gpu.flags = [*gpu.flags, flag]
    gpu.error = error
    return gpu


class CrossCheck:
    """The CPU judge of a GPU ``Verifier``: started on first use, closed with it."""

    def __init__(self, config: VerifyConfig) -> None:
        self.config = cross_check_config(config)
        self.reject_unfinished = config.cross_check_unfinished == "reject"
        self._verifier: Verifier | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._said = False

    def _cpu(self) -> Verifier:
        with self._lock:
            if self._closed:
                raise RuntimeError("the CPU cross-check was closed")
            if self._verifier is None:
                from tritonrl.verify.parent.verifier import Verifier

                self._verifier = Verifier(self.config)
            return self._verifier

    def check(self, task: KernelTask, result: VerifyResult) -> VerifyResult:
        """``result`` (a GPU's verdict) as the CPU's memory evidence leaves it; the CPU's outcome in
        ``timing["cpu_cross_check"]``."""
        if result.correct is not True or not result.code:
            return result
        start = time.monotonic()
        try:
            cpu = self._cpu().verify(task, code=result.code)
        except Exception as exc:  # noqa: BLE001 - the GPU's verdict stands, the failure is said and recorded
            self._say(f"the CPU cross-check failed ({type(exc).__name__}: {exc}); GPU verdicts stand unchecked")
            result.timing["cpu_cross_check"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            return result
        if Flag.VERIFIER_ERROR.value in cpu.flags or Flag.SANDBOX_UNAVAILABLE.value in cpu.flags:
            self._say(f"the CPU cross-check could not judge ({', '.join(cpu.flags)}: {(cpu.error or '')[:200]}); "
                      "GPU verdicts it cannot judge stand unchecked")
        result.timing["cpu_cross_check"] = {"correct": cpu.correct, "flags": list(cpu.flags),
                                            "s": round(time.monotonic() - start, 3)}
        if memory_evidence(cpu):
            return overturned(result, cpu)
        why = unfinished(cpu)
        if why is not None and self.reject_unfinished:
            return left_unchecked(result, cpu, why)
        return result

    def _say(self, message: str) -> None:
        """A warning, once a verifier (what failed once fails for every candidate after)."""
        with self._lock:
            if self._said:
                return
            self._said = True
        log.warning("%s", message)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            verifier, self._verifier = self._verifier, None
        if verifier is not None:
            verifier.close()
