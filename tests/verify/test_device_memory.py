"""Running out of device memory beside other candidates is the batch's doing: the unit runs again, alone.

On an H100, 48 children and the judge ran six honest KernelBench GEMMs out of memory in their correctness trials
(docs/benchmarks.md, "Out of memory in a busy batch"). Here, on the CPU: what counts as running out, the judge's
retry of a unit with the GPU to itself (``Session.gpu_unit``), and whole verdicts of a candidate that runs out once
(then judged as it is) and of one that always does (its failure, retried once).
"""

import threading

import pytest
import torch

from tests.verify.tasks import TASKS
from tritonrl.verify import Stage
from tritonrl.verify.judge.gpu_lock import GpuLease, RWLock
from tritonrl.verify.judge.session import Session
from tritonrl.verify.shared.arena import CudaError
from tritonrl.verify.shared.device_memory import claims_out_of_memory, out_of_memory


def test_what_counts_as_running_out():
    assert out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.25 GiB."))
    assert out_of_memory(CudaError("cuMemCreate failed with CUDA driver error 2"))
    assert out_of_memory(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY in a launcher"))
    try:  # the chain: a candidate's wrapper around torch's error
        try:
            raise torch.OutOfMemoryError("CUDA out of memory")
        except RuntimeError as inner:
            raise ValueError("forward failed") from inner
    except ValueError as outer:
        assert out_of_memory(outer)
    # not the device's memory: another driver error, a kernel's own shared memory, anything else
    assert not out_of_memory(CudaError("cuMemCreate failed with CUDA driver error 20"))
    assert not out_of_memory(RuntimeError("out of resource: shared memory, Required: 262144, Hardware limit: 232448"))
    assert not out_of_memory(ValueError("shape mismatch"))
    assert not out_of_memory(None)


def test_a_child_claims_it_only_with_true():
    assert claims_out_of_memory({"ok": False, "out_of_memory": True})
    assert claims_out_of_memory({"ok": True}, {"ok": False, "out_of_memory": True})
    assert not claims_out_of_memory({"ok": False, "out_of_memory": 1}, {}, None, "out_of_memory")


class _Store:
    def __init__(self):
        self.released = 0

    def release_cache(self):
        self.released += 1


class _Judge:
    def __init__(self):
        self.store = _Store()


def _session() -> Session:
    """A session with only what ``gpu_unit`` uses: its lease on one GPU's lock, its facts, its judge's store."""
    session = Session.__new__(Session)
    session.judge, session.lease = _Judge(), GpuLease("0", RWLock())
    session.facts = {"timing": {}, "stage_s": {}}
    return session


def _unit(session: Session, outcomes: list):
    """A unit that records the lease it ran under and returns (or raises) the next outcome."""
    modes: list = []

    def unit():
        modes.append(session.lease.mode)
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return unit, modes


def test_a_unit_out_of_memory_beside_others_runs_again_alone():
    session = _session()
    unit, modes = _unit(session, [torch.OutOfMemoryError("CUDA out of memory"), "done"])
    assert session.gpu_unit("full", "full0", unit) == "done"
    assert modes == ["shared", "exclusive"]
    assert session.facts["timing"]["memory_retries"] == ["full0"]
    assert session.judge.store.released == 1  # the judge's own unused blocks went back before the retry
    assert session.lease.mode is None


def test_a_childs_claim_earns_one_retry_and_its_second_answer_stands():
    session = _session()
    short = {"ok": False, "out_of_memory": True}
    unit, modes = _unit(session, [short, short])
    assert session.gpu_unit("tiny", "tiny", unit, said=claims_out_of_memory) is short
    assert modes == [None, "exclusive"]  # the tiny stage runs without a lease; the retry holds the GPU alone
    assert session.facts["timing"]["memory_retries"] == ["tiny"]


def test_other_failures_are_not_retried():
    session = _session()
    unit, modes = _unit(session, [ValueError("the candidate's bug"), "never"])
    with pytest.raises(ValueError):
        session.gpu_unit("full", "full0", unit)
    unit, modes = _unit(session, [{"ok": False, "flag": "runtime_error"}])
    assert session.gpu_unit("full", "full0", unit, said=claims_out_of_memory) == {"ok": False,
                                                                                 "flag": "runtime_error"}
    assert modes == ["shared"] and "memory_retries" not in session.facts["timing"]


def test_the_retry_waits_for_the_gpu_alone():
    """The retry is exclusive: it waits while another candidate's unit holds a shared lease."""
    session, other = _session(), None
    lock = session.lease._lock
    other = GpuLease("0", lock)
    other.share()
    unit, modes = _unit(session, [torch.OutOfMemoryError("CUDA out of memory"), "done"])
    done = threading.Event()
    worker = threading.Thread(target=lambda: (session.gpu_unit("full", "full1", unit), done.set()))
    worker.start()
    assert not done.wait(0.3)  # the retry waits for the other unit
    other.release()
    assert done.wait(5)
    worker.join(5)
    assert modes == ["shared", "exclusive"]


SHORT_ONCE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl

RUNS = [0]


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        RUNS[0] += 1
        if RUNS[0] in SHORT:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.25 GiB.")
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def test_a_candidate_short_once_is_judged_as_it_is(runtime_verifier):
    """Its second forward (the first full trial) runs out of memory: run again alone, it is correct."""
    code = SHORT_ONCE.replace("RUNS = [0]", "RUNS = [0]\nSHORT = {2}")
    result = runtime_verifier.verify(TASKS["relu"], code=code)
    assert result.correct, (result.stage, result.flags, result.error)
    assert result.timing.get("memory_retries") == ["full0"]


def test_a_candidate_always_short_fails_once_retried(runtime_verifier):
    code = SHORT_ONCE.replace("RUNS = [0]", "RUNS = [0]\nSHORT = range(2, 100)")
    result = runtime_verifier.verify(TASKS["relu"], code=code)
    assert not result.correct and result.stage is Stage.FULL
    assert "runtime_error" in result.flags and "OutOfMemoryError" in (result.error or ""), result.error
    assert result.timing.get("memory_retries") == ["full0"]


def test_a_child_gives_its_blocks_back_only_when_the_device_is_short(monkeypatch):
    """After a full trial a child empties its allocator's cache (and poisons again) only below a quarter free:
    after every trial, the driver's work landed in other candidates' timed regions on an H100."""
    from tritonrl.verify.child import harness

    done: list = []
    monkeypatch.setattr(harness, "_empty_cache", lambda: done.append("empty"))
    monkeypatch.setattr(harness, "poison_memory", lambda device: done.append(f"poison {device}"))
    monkeypatch.setattr(harness, "_mem_get_info", lambda device: (30, 100))
    assert not harness.release_memory("cuda:0") and done == []
    monkeypatch.setattr(harness, "_mem_get_info", lambda device: (20, 100))
    assert harness.release_memory("cuda:0") and done == ["empty", "poison cuda:0"]
    assert not harness.release_memory("cpu") and len(done) == 2


MEMO_THEN_COPY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl

RUNS, MEMO = [0], []


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        RUNS[0] += 1
        if RUNS[0] == 2:  # the first full trial: torch's answer kept, then a claim of running out
            MEMO.append(torch.relu(x))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.25 GiB.")
        src = MEMO[0] if RUNS[0] == 3 else x  # the retry, on the same inputs: torch's answer through the kernel
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](src, out, x.numel(), BLOCK=1024)
        return out
'''


def test_a_claim_of_running_out_buys_no_unjudged_forward(runtime_verifier):
    """A policy's next try against the retry: the claimed out-of-memory forward computes the answer with torch and
    keeps it, and the retry (same inputs) passes it through a kernel. The watch remembers what torch made in the
    failed forward: the copy is torch's answer, not the kernel's."""
    result = runtime_verifier.verify(TASKS["relu"], code=MEMO_THEN_COPY)
    assert not result.correct and "output_not_written" in result.flags, (result.stage, result.flags, result.error)
    assert result.timing.get("memory_retries") == ["full0"]
    control = runtime_verifier.verify(TASKS["relu"], code=MEMO_THEN_COPY.replace("MEMO[0] if RUNS[0] == 3 else x", "x"))
    assert control.correct and control.timing.get("memory_retries") == ["full0"], control.error
