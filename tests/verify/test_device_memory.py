"""Running out of device memory beside other candidates is the batch's doing: the unit runs again, alone.

On an H100, 48 children and the judge ran six honest KernelBench GEMMs out of memory in their correctness trials
(docs/benchmarks-history.md, "Out of memory in a busy batch"). Here, on the CPU: what counts as running out (the judge's own
exceptions; a child's allocator's reports, never its exception or text), the judge's retry of a unit with the GPU to
itself (``Session.gpu_unit``, a GPU's only) on fresh inputs and a poisoned arena (``Session.retry_trial``), and
whole verdicts of candidates that claim to run out (issue 51: a claim buys nothing).
"""

import threading
from pathlib import Path

import pytest
import torch

from tests.verify.tasks import TASKS
from tritonrl.verify import Stage
from tritonrl.verify.judge.gpu_lock import GpuLease, RWLock
from tritonrl.verify.judge.session import Session
from tritonrl.verify.shared.arena import CudaError
from tritonrl.verify.shared.device_memory import out_of_memory, short_beside_others


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


GIB = 1 << 30


def test_only_the_allocators_report_of_a_request_the_device_alone_would_hold_counts():
    """A child's step ran out beside others when its allocator refused a request larger than what was free that
    fits, with what the child held, in the whole device (the judge's own measure of it)."""
    beside = {"requested": 2 * GIB, "allocated": 1 * GIB, "free": 1 * GIB}
    assert short_beside_others([beside], 80 * GIB)
    assert short_beside_others([{"bogus": 1}, beside], 80 * GIB)
    # no device of this size could hold it (a request of 1 PiB made on purpose), or it would have fitted anyway
    assert not short_beside_others([{"requested": 1 << 50, "allocated": 0, "free": 1 * GIB}], 80 * GIB)
    assert not short_beside_others([{"requested": 1 * GIB, "allocated": 0, "free": 2 * GIB}], 80 * GIB)
    # anything else a reply may carry: a claim, not a report
    for reports in (None, True, "CUDA out of memory", {"out_of_memory": True}, [{"requested": "2", "allocated": 0,
                    "free": 0}], [{"requested": True, "allocated": 0, "free": 0}], [{"requested": -1, "allocated": 0,
                                                                                     "free": -5}]):
        assert not short_beside_others(reports, 80 * GIB), reports
    assert not short_beside_others([beside], 0)


def test_the_harness_passes_on_only_what_the_allocator_reported():
    """``Shortage`` keeps what the allocator's observer was told (a GPU's: on a CPU nothing is attached), each
    step's reports once."""
    from tritonrl.verify.child.shortage import Shortage

    shortage = Shortage(held=lambda device: 1 * GIB)
    assert not shortage.install("cpu") and shortage.taken() == []
    # what PyTorch's allocator calls: (device, requested, the device's total or allowed share, free); what this
    # process held is read, not taken from the call (read as "allocated" it was the whole device, and no report
    # ever fitted: the retry never ran on a GPU)
    shortage._observe(0, 2 * GIB, 80 * GIB, 1 * GIB)
    reports = shortage.taken()
    assert reports == [{"requested": 2 * GIB, "allocated": 1 * GIB, "free": 1 * GIB, "total": 80 * GIB}]
    assert short_beside_others(reports, 80 * GIB)
    assert shortage.taken() == []


class _Store:
    def __init__(self):
        self.released = 0

    def release_cache(self):
        self.released += 1


class _Judge:
    def __init__(self, device):
        self.store = _Store()
        self.device = device


def _session(device: str = "cuda:0") -> Session:
    """A session with only what ``gpu_unit`` uses: its lease on one GPU's lock, its facts, its judge's store and
    device (no GPU is touched: the units are the test's)."""
    session = Session.__new__(Session)
    session.judge, session.lease = _Judge(device), GpuLease("0", RWLock())
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


def test_the_allocators_report_earns_one_retry_of_its_own_and_its_answer_stands():
    """On the child's allocator's report (``short``), the retry unit runs (a trial's: fresh inputs), alone."""
    session = _session()
    first, second = {"ok": False, "device_short": ["..."]}, {"ok": False, "device_short": ["..."]}
    unit, modes = _unit(session, [first])
    retry, retry_modes = _unit(session, [second])
    assert session.gpu_unit("tiny", "tiny", unit, retry=retry, short=lambda r: "device_short" in r) is second
    assert modes == [None] and retry_modes == ["exclusive"]  # the tiny stage runs without a lease; the retry alone
    assert session.facts["timing"]["memory_retries"] == ["tiny"]


def test_on_a_cpu_nothing_is_retried():
    """No device is shared with other candidates on a CPU: the judge's own error is raised, a child's report (there
    is none) changes nothing."""
    session = _session("cpu")
    unit, modes = _unit(session, [torch.OutOfMemoryError("CUDA out of memory")])
    with pytest.raises(torch.OutOfMemoryError):
        session.gpu_unit("full", "full0", unit)
    unit, modes = _unit(session, [{"ok": False}])
    assert session.gpu_unit("full", "full0", unit, short=lambda r: True) == {"ok": False}
    assert "memory_retries" not in session.facts["timing"]


def test_other_failures_are_not_retried():
    session = _session()
    unit, modes = _unit(session, [ValueError("the candidate's bug"), "never"])
    with pytest.raises(ValueError):
        session.gpu_unit("full", "full0", unit)
    unit, modes = _unit(session, [{"ok": False, "flag": "runtime_error"}])
    assert session.gpu_unit("full", "full0", unit, short=lambda r: False) == {"ok": False, "flag": "runtime_error"}
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


def test_a_claimed_out_of_memory_error_is_the_candidates_failure(runtime_verifier):
    """The candidate raises ``torch.OutOfMemoryError`` itself (issue 51): no allocator said so, and on a CPU no
    device is shared, so it is its own failure: no retry, whatever the exception's type or text."""
    code = SHORT_ONCE.replace("RUNS = [0]", "RUNS = [0]\nSHORT = {3}")
    result = runtime_verifier.verify(TASKS["relu"], code=code)
    assert not result.correct and result.stage is Stage.FULL
    assert "runtime_error" in result.flags and "OutOfMemoryError" in (result.error or ""), result.error
    assert "memory_retries" not in result.timing


def test_a_retry_runs_on_fresh_inputs_and_a_poisoned_arena():
    """``Session.retry_trial``: the reference of inputs no call was handed (a seed of their own), every arena byte
    poison before the retry's build, the model's state digests as a trial's."""
    from tritonrl.verify.judge.references import ReferenceStore
    from tritonrl.verify.shared.arena import Arena
    from tritonrl.verify.shared.trial import TrialSpec

    task = TASKS["relu"]
    trial = TrialSpec("full0", "full", task.key, task.source, 42)
    store = ReferenceStore("cpu", True, 1 << 30, "secret")
    first = store.get([trial])["full0"]
    session = _session("cpu")
    session.judge.store = store
    session.arena = Arena.create(1 << 20, "cpu")
    session.arena.tensor(0, torch.float32, [1024]).fill_(1.5)  # what the failed attempt left
    seen = {}

    def trial_once(trial_, ref, layout, stage, building, again=False):
        seen.update(ref=ref, layout=layout, arena=session.arena.tensor(0, torch.uint8, [session.arena.nbytes]).clone())
        return "ran"

    session.trial_once = trial_once
    try:
        assert session.retry_trial(trial, "full", "full") == "ran"
    finally:
        session.arena.close()
    assert bool((seen["arena"] == 0xFF).all())
    assert seen["ref"].inputs[0].shape == first.inputs[0].shape
    assert not torch.equal(seen["ref"].inputs[0], first.inputs[0])
    assert torch.equal(seen["ref"].outputs[0], torch.relu(seen["ref"].inputs[0]))
    assert seen["layout"].nbytes == type(seen["layout"]).of(first).nbytes


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
        if RUNS[0] == 3:  # the first full trial (the tiny model is called twice): torch's answer kept, then a claim
            MEMO.append(torch.relu(x))
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.25 GiB.")
        src = MEMO[0] if RUNS[0] == 4 else x  # the retry, on the same inputs: torch's answer through the kernel
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](src, out, x.numel(), BLOCK=1024)
        return out
'''


def test_a_claim_of_running_out_buys_no_unjudged_forward(runtime_verifier):
    """A policy's next try against the retry: the claimed out-of-memory forward computes the answer with torch and
    keeps it, for a retry that passes it through a kernel. The forward that raised is judged like any other: its
    torch compute is refused. Its control raises without computing: the candidate's own runtime error."""
    result = runtime_verifier.verify(TASKS["relu"], code=MEMO_THEN_COPY)
    assert not result.correct and "torch_compute" in result.flags, (result.stage, result.flags, result.error)
    assert "memory_retries" not in result.timing
    control = runtime_verifier.verify(TASKS["relu"], code=MEMO_THEN_COPY.replace("MEMO.append(torch.relu(x))", "pass"))
    assert not control.correct and "runtime_error" in control.flags, control.error
    assert "memory_retries" not in control.timing


# more than is free even once the allocator gives its cached blocks back: the judge and the others hold the rest
TRULY_SHORT = ("free, total = torch.cuda.mem_get_info()\n"
               "            torch.empty(free + torch.cuda.memory_reserved() + (64 << 20), dtype=torch.uint8, "
               "device=x.device)")
REALLY_SHORT_ONCE = SHORT_ONCE.replace(
    'raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.25 GiB.")', TRULY_SHORT)
# r12_claim_retry_init_reads_arena, running out for real: its retry's ``__init__`` reads the arena's inputs
INIT_READS_ARENA = (Path(__file__).parent / "fixtures" / "integrity" / "r12_claim_retry_init_reads_arena.py").read_text(
    ).replace('raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")', TRULY_SHORT)


@pytest.mark.gpu
def test_on_a_gpu_an_honest_kernel_that_truly_runs_out_gets_its_retry(tmp_path):
    """On a GPU, a request the allocator refuses because others hold the memory (the judge's references, the other
    children): the allocator reports it, the trial runs again alone, on fresh inputs, and the honest kernel passes.
    A candidate that makes the same request, then has its retry copy what it left in the arena: the arena was
    poisoned and the inputs are new (refused)."""
    from tests.verify.test_gpu import GPU_CONFIG
    from tritonrl.config import VerifyConfig
    from tritonrl.verify import Verifier

    honest = REALLY_SHORT_ONCE.replace("RUNS = [0]", "RUNS = [0]\nSHORT = {3}")
    assert TRULY_SHORT in honest and TRULY_SHORT in INIT_READS_ARENA  # the edits took
    with Verifier(VerifyConfig(static_checks=False, cache_dir=str(tmp_path), **GPU_CONFIG)) as verifier:
        result = verifier.verify(TASKS["relu"], code=honest)
        assert result.correct and result.timing.get("memory_retries") == ["full0"], (result.flags, result.error)
        parked = verifier.verify(TASKS["relu"], code=INIT_READS_ARENA)
        assert not parked.correct and parked.timing.get("memory_retries") == ["full0"], (parked.flags, parked.error)
