"""The CPU cross-check of a GPU verdict (``tritonrl.verify.parent.cross_check``): the CPU's memory evidence (a race,
a read of memory nothing wrote, an access outside the launch's tensors) overturns a GPU's *correct*; nothing else
the CPU finds does. The GPU verdicts here are made up (no GPU on this machine); the CPU judging is real."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.tasks.sources import load_bundled
from tritonrl.verify.parent.cross_check import CrossCheck, cross_check_config, memory_evidence, unfinished
from tritonrl.verify.shared.flags import OUTSIDE_LAUNCH, UNSET_READ
from tritonrl.verify.shared.verdict import Stage, VerifyResult

INTEGRITY = Path(__file__).parent / "fixtures" / "integrity"


def _wrong(flag: str, error: str = "") -> VerifyResult:
    return VerifyResult(Stage.FULL, valid=True, compiled=True, tiny_correct=True, correct=False, flags=[flag],
                        error=error)


def _gpu_correct(code: str) -> VerifyResult:
    return VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True, code=code,
                        speedup=1.2, timing={"gpu": "made up"})


def test_only_what_a_gpu_run_cannot_show_is_evidence():
    assert memory_evidence(_wrong("data_race", "data race: a program loads what another program stores"))
    assert memory_evidence(_wrong("runtime_error", f"trial full0: a kernel loaded address 0x10, {UNSET_READ} (...)"))
    assert memory_evidence(_wrong("runtime_error", f"a kernel stored to address 0x10, {OUTSIDE_LAUNCH}: ..."))
    for flag, error in [("output_mismatch", "3/64 values off"), ("interpreter_only", "a plain Python call"),
                        ("runtime_error", "FalseHint: tl.multiple_of(n, 16) but n = 17"), ("timeout", ""),
                        ("cpu_unsupported", ""), ("tiny_mismatch", UNSET_READ)]:
        assert not memory_evidence(_wrong(flag, error)), flag
    assert not memory_evidence(VerifyResult(Stage.DONE, correct=True))
    assert not memory_evidence(VerifyResult(Stage.COMPILE, correct=None, flags=["declined", "data_race"]))


def test_the_cpu_judge_is_the_gpu_judges_settings_on_the_cpu():
    gpu = VerifyConfig(device="cuda", timing=True, timeout_s=45.0, strict=True, tolerance="kernelbench")
    cpu = cross_check_config(gpu)
    assert (cpu.device, cpu.timing, cpu.multi_input, cpu.known_good, cpu.cpu_cross_check, cpu.hold_hints) == \
        ("cpu", False, True, False, False, False)
    assert (cpu.timeout_s, cpu.strict, cpu.tolerance) == (90.0, True, "kernelbench")  # twice: a busy host


@pytest.fixture(scope="module")
def cross_check(tmp_path_factory):
    check = CrossCheck(VerifyConfig(device="cuda", timeout_s=30.0,
                                    cache_dir=str(tmp_path_factory.mktemp("cross-check-cache"))))
    yield check
    check.close()


@pytest.fixture(scope="module")
def mean_dim():
    return next(t for t in load_bundled() if t.name == "l1_mean_dim")


@pytest.mark.parametrize("fixture, flag", [
    ("r35_mean_dim_last_program_finalizes_zeroed_scratch", "data_race"),
    ("r35_mean_dim_relaxed_ticket_last_program", "data_race"),
    ("r35_mean_dim_last_program_finalizes_unwritten_scratch", "runtime_error"),
    ("r35_mean_dim_race_behind_a_false_hint", "data_race"),  # the hint stopped the CPU first (not held there now)
    ("r35_mean_dim_race_on_a_cuda_scratch", "data_race"),  # device="cuda": cpu_unsupported before (now the CPU)
    ("r36_mean_dim_racy_split_only_at_moved_shapes", "data_race"),  # one full trial missed it (now every trial)
    ("r36_mean_dim_unsynced_finalizer_behind_inline_asm", "data_race"),  # cpu_unsupported before (PTX runs now)
    ("r37_mean_dim_race_behind_plain_triton_nan_bits", "data_race"),  # the CPU took another path (x86's NaN bits)
])
def test_a_race_the_gpu_did_not_expose_overturns_its_verdict(cross_check, mean_dim, fixture, flag):
    """The thirty-fifth red team's a12-a14, right on an H200 at every trial (2026-12-01): made GPU verdicts of
    *correct* become wrong, with the CPU's flag and error."""
    result = cross_check.check(mean_dim, _gpu_correct((INTEGRITY / f"{fixture}.py").read_text()))
    assert result.correct is False and result.stage == Stage.FULL
    assert flag in result.flags and result.error.startswith("the CPU cross-check")
    assert result.timing["cpu_cross_check"]["correct"] is False and result.timing["gpu"] == "made up"


def test_an_honest_kernel_and_the_cpus_other_findings_leave_the_gpu_verdict(cross_check, mean_dim):
    honest = cross_check.check(mean_dim, _gpu_correct(mean_dim.solution))
    assert honest.correct is True and honest.flags == [] and honest.speedup == 1.2
    assert honest.timing["cpu_cross_check"]["correct"] is True
    # wrong values on the CPU are the interpreter's business here (the GPU's trials judged the values)
    wrong_value = mean_dim.solution.replace("/ n_cols", "/ (n_cols + 1)")
    assert wrong_value != mean_dim.solution
    kept = cross_check.check(mean_dim, _gpu_correct(wrong_value))
    assert kept.correct is True and kept.timing["cpu_cross_check"]["correct"] is False
    # a rejection is never checked (nor turned into an acceptance)
    rejected = _wrong("output_mismatch")
    assert cross_check.check(mean_dim, rejected) is rejected and "cpu_cross_check" not in rejected.timing


def test_a_gpu_verifier_hands_each_verdict_to_its_cross_check(monkeypatch, mean_dim):
    """Wiring (a CPU ``Verifier`` given a cross-check, as a GPU one makes itself): ``verify`` returns the checked
    verdict, a batch has a thread for each check beside each place, and ``close`` closes it."""
    from tritonrl.verify import Verifier

    seen = []

    class Recorder:
        def check(self, task, result):
            seen.append(result.code)
            result.correct = False
            return result

        def close(self):
            seen.append("closed")

    verifier = Verifier(VerifyConfig(device="cpu", workers=2))
    assert verifier._cross_check is None and verifier._threads == 2  # a CPU verdict is the CPU's already
    verifier._cross_check = Recorder()
    monkeypatch.setattr(verifier, "start", lambda wait=False: None)
    monkeypatch.setattr(verifier, "_verify", lambda task, code, completion: _gpu_correct(code))
    assert verifier.verify(mean_dim, code="pass").correct is False and verifier._threads == 4
    verifier.close()
    assert seen == ["pass", "closed"]


def test_hints_are_held_unless_the_judge_says_not(tmp_path):
    """``verify.hold_hints`` reaches the child: a false ``tl.multiple_of`` on the element count stops the kernel by
    default, and is let be where the judge does not hold hints (the cross-check's CPU judge)."""
    from tritonrl.verify import Verifier

    relu = next(t for t in load_bundled() if t.name == "l1_relu")
    code = (INTEGRITY / "r34_relu_false_multiple_of_on_the_count.py").read_text()
    verdicts = {}
    for hold in (True, False):
        with Verifier(VerifyConfig(device="cpu", workers=1, hold_hints=hold, cache_dir=str(tmp_path))) as verifier:
            verdicts[hold] = verifier.verify(relu, code=code)
    assert verdicts[True].correct is False and "FalseHint" in verdicts[True].error
    assert verdicts[False].correct is True, verdicts[False].error


def test_a_cross_check_that_cannot_judge_leaves_the_verdict_and_says_so(mean_dim, caplog):
    """A CPU judge that fails (here: it cannot start) is said once; the GPU's verdict stands, its failure recorded."""
    check = CrossCheck(VerifyConfig(device="cuda"))

    def broken():
        raise RuntimeError("no CPU judge here")

    check._cpu = broken
    with caplog.at_level("WARNING", logger="tritonrl.verify.parent.cross_check"):
        first = check.check(mean_dim, _gpu_correct("code"))
        second = check.check(mean_dim, _gpu_correct("code"))
    assert first.correct is True and "no CPU judge here" in first.timing["cpu_cross_check"]["error"]
    assert second.correct is True
    assert sum("CPU cross-check failed" in r.getMessage() for r in caplog.records) == 1


# ReLU whose kernel also reads a special register through inline PTX (harmless on a GPU; not run by the interpreter),
# and one that spins in the interpreter for longer than the check's CPU judge may take.
SPECIAL_REGISTER = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    lane = tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, tl.where(lane >= 0, tl.maximum(x, 0.0), x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
"""
SLOW_HERE = SPECIAL_REGISTER.replace(
    '''    lane = tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r,r", [x], dtype=tl.int32, is_pure=True, pack=1)
''', '''    lane = 0
    for _ in range(20000):  # microseconds on a GPU, seconds a program under the interpreter
        lane += 1
''')


def test_what_the_cpu_could_not_finish_is_said():
    assert unfinished(_wrong("cpu_unsupported", "tl.inline_asm_elementwise is not supported")) == "cpu_unsupported"
    assert unfinished(_wrong("timeout", "")) == "timeout"
    for flag in ("data_race", "output_mismatch", "runtime_error"):
        assert unfinished(_wrong(flag)) is None
    assert unfinished(VerifyResult(Stage.COMPILE, correct=None, flags=["declined", "cpu_unsupported"])) is None
    assert unfinished(_wrong("timeout")) and unfinished(VerifyResult(  # the task's sizes, not the candidate
        Stage.FULL, correct=False, flags=["timeout", "cpu_size_limit"])) is None


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    checks = {policy: CrossCheck(VerifyConfig(device="cuda", timeout_s=3.0, cross_check_unfinished=policy,
                                              cache_dir=str(tmp_path_factory.mktemp(policy))))
              for policy in ("reject", "stand")}
    yield checks
    for check in checks.values():
        check.close()


@pytest.mark.parametrize("code, why", [(SPECIAL_REGISTER, "cpu_unsupported"), (SLOW_HERE, "timeout")])
def test_a_cross_check_that_could_not_finish_rejects_unless_told_to_let_stand(policies, code, why):
    """The thirty-sixth red team's a02 (a race behind assembly the interpreter could not run) and a08 (a race in a
    kernel made slow for the interpreter alone) kept the GPU's verdict: a CPU run that ends early has looked for no
    race. Now such a verdict is rejected, flag ``cross_check_unfinished`` (the CPU's outcome in its error); told
    ``stand``, the GPU's verdict stands with the CPU's outcome recorded."""
    relu = next(t for t in load_bundled() if t.name == "l1_relu")
    assert SLOW_HERE != SPECIAL_REGISTER
    rejected = policies["reject"].check(relu, _gpu_correct(code))
    assert why in rejected.timing["cpu_cross_check"]["flags"], rejected.timing
    assert rejected.correct is False and rejected.stage == Stage.FULL, rejected
    assert rejected.flags == ["cross_check_unfinished"] and why in rejected.error
    kept = policies["stand"].check(relu, _gpu_correct(code))
    assert why in kept.timing["cpu_cross_check"]["flags"], kept.timing
    assert kept.correct is True and kept.flags == [] and kept.speedup == 1.2
