"""The CPU interpreter's race check (``fidelity.find_race``) on a launch's recorded accesses, and a launch whose
every store lane is masked off: a ReLU that stores only the positive values of an all-negative block stored nothing,
and the check raised ``IndexError`` on the empty record (an honest fixture, ``i8_empty_then_zero_half``, was
rejected whenever the secret tiny inputs made its second half all negative: CI, 2026-11-29)."""

from pathlib import Path

import numpy as np

from tests.verify.tasks import RELU
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.child.fidelity import find_race

FIXTURE = "tests/verify/fixtures/integrity/i8_empty_then_zero_half.py"


def record(program: int, addresses: list[int], values: list[float] | None = None):
    addr = np.array(addresses, dtype=np.int64)
    if values is None:
        return program, addr
    return program, addr, np.array(values, dtype=np.float32).view(np.uint32)


def test_stores_with_every_lane_masked_off_are_no_race():
    assert find_race([record(0, [8])], [record(0, [], []), record(1, [], [])]) is None
    assert find_race([record(0, [8])], [], [record(1, [])]) is None


def test_two_programs_storing_different_values_to_one_place_race():
    race = find_race([], [record(0, [16], [1.0]), record(1, [16], [2.0])])
    assert race is not None and "different values" in race


def test_a_load_of_what_another_program_stores_races():
    race = find_race([record(1, [16])], [record(0, [16], [1.0])])
    assert race is not None and "loads what another program" in race


def test_an_honest_relu_storing_nothing_from_a_negative_block_is_accepted(verifier):
    negative = RELU.replace("torch.randn(batch_size, dim)", "-torch.rand(batch_size, dim) - 0.1")
    assert negative != RELU
    result = verifier.verify(KernelTask(name="negative_relu", level=1, source=negative), code=Path(FIXTURE).read_text())
    assert result.correct, (result.flags, result.error)


def test_lanes_of_one_store_race_only_when_they_write_different_values_to_one_place():
    """The thirty-first red team's ``a03``: the interpreter applies a store's lanes in order, so the last lane's
    value always lands; on a GPU which lane wins is not specified. Lanes broadcasting one value agree."""
    from tritonrl.verify.child.fidelity import _bits, _lanes_disagree

    def bits(values):
        return _bits(np.array(values, dtype=np.float32), np)

    assert _lanes_disagree(np.array([8, 12, 16]), bits([1.0, 2.0, 3.0]), np) is None  # one lane a place
    assert _lanes_disagree(np.array([16, 16, 16]), bits([5.0, 5.0, 5.0]), np) is None  # a broadcast scalar
    assert _lanes_disagree(np.array([20, 16, 16]), bits([1.0, 2.0, 3.0]), np) == 16



def _launch(events):
    """A launch's record from events in the order its programs ran: ("store", program, addresses),
    ("load", program, addresses), ("barrier", program, ()), ("atomic", program, addresses, sem, scope[, width[,
    used]]): a 4-byte atomic whose result is used unless said."""
    from tritonrl.verify.child.fidelity import _Accesses

    record_ = _Accesses()
    record_.start((4, 1, 1), seed=0)
    for kind, program, addresses, *sem in events:
        addr = np.array(addresses, dtype=np.int64)
        record_.program = program
        if kind in ("store", "scalar_store"):
            record_.store(program, addr, np.ones(addr.shape, dtype=np.uint32), scalar=kind == "scalar_store")
        elif kind == "load":
            record_.load(program, addr)
        elif kind == "barrier":
            record_.barrier()
        else:
            record_.updates.append((program, addr))
            sem_, scope, width, used, scalar = (*sem, 4, True, False)[:5] if len(sem) == 2 else (*sem, True, False)[:5]
            record_.fence(program, addr, sem_, scope, width, used, scalar)
    return find_race(record_.loads, record_.stores, record_.updates, record_)


def test_a_store_released_and_acquired_before_the_load_is_no_race():
    """The last-block pattern (CUB's; Triton's default sem acq_rel): programs store their partials, pass a barrier
    (the program's threads' stores before its one-thread ticket: Triton 3.6 adds none), then take a ticket; the
    last takes its ticket (its result used: Triton broadcasts it behind a barrier), then loads every partial. The
    PTX memory model orders those stores before those loads; relaxed tickets, a CTA scope, no barrier before the
    ticket, a ticket before the store, a load before the ticket, an unused acquire with no barrier after it, or
    atomics of two widths order nothing."""
    partial, ticket = [64, 68, 72], [1024]

    def pattern(sem="ACQUIRE_RELEASE", scope="GPU", store_first=True, load_last=True, barrier=True, used=True,
                width=4):
        events = []
        for p in range(3):
            store, atomic = ("store", p, [partial[p]]), ("atomic", p, ticket, sem, scope, 4, False)
            fence = [("barrier", p, [])] if barrier else []
            events += [store, *fence, atomic] if store_first else [atomic, *fence, store]
        last = [("atomic", 3, ticket, sem, scope, width, used), ("load", 3, partial)]
        return events + (last if load_last else last[::-1])

    assert _launch(pattern()) is None
    assert _launch(pattern(used=False)[:-1] + [("barrier", 3, []), ("load", 3, partial)]) is None
    assert _launch(pattern(sem="RELEASE")) is not None  # the reader's ticket does not acquire
    for racy in (pattern(sem="RELAXED"), pattern(scope="CTA"), pattern(store_first=False),
                 pattern(load_last=False), pattern(barrier=False), pattern(used=False), pattern(width=8)):
        race = _launch(racy)
        assert race is not None and "loads what another program" in race
    # a scalar store and a scalar ticket are one thread's (Triton predicates both on the program's first thread)
    scalar = [e for p in range(3) for e in (("scalar_store", p, [partial[p]]),
                                            ("atomic", p, ticket, "ACQUIRE_RELEASE", "GPU", 4, False, True))]
    assert _launch(scalar + [("atomic", 3, ticket, "ACQUIRE_RELEASE", "GPU"), ("load", 3, partial)]) is None
    # a reader that ran before a writer: nothing the writer did can be ordered before its load
    early = [("store", 0, [64]), ("barrier", 0, []), ("atomic", 0, ticket, "ACQUIRE_RELEASE", "GPU"),
             ("atomic", 3, ticket, "ACQUIRE_RELEASE", "GPU"), ("load", 3, [64, 68]),
             ("store", 1, [68]), ("barrier", 1, []), ("atomic", 1, ticket, "ACQUIRE_RELEASE", "GPU")]
    assert _launch(early) is not None
