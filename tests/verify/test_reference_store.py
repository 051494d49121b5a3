"""The judge's reference store: references computed once per trial and kept with a bound, inputs no candidate
can make itself (a secret salt), fresh inputs for every timed call, and a task's failure named by its trial."""

import dataclasses

import pytest
import torch

from tests.verify.tasks import RELU
from tritonrl.errors import TaskError
from tritonrl.verify.judge.references import ReferenceStore, input_seed
from tritonrl.verify.shared.trial import TrialSpec

MUTATES = RELU.replace("return torch.relu(x)", "x.mul_(2)\n        return torch.relu(x)")
BROKEN = RELU.replace("return torch.relu(x)", "raise RuntimeError('reference is broken')")


def _trial(k: int = 0, source: str = RELU, name: str = "full0") -> TrialSpec:
    return TrialSpec(name, "full", f"task{k}", source, seed=42 + k)


def _store(salt: str = "s", max_bytes: int = 1 << 30) -> ReferenceStore:
    return ReferenceStore("cpu", True, max_bytes, salt)


def test_each_trial_is_computed_once_and_matches_the_model():
    store = _store()
    first = store.get([_trial()])["full0"]
    again = store.get([_trial()])["full0"]
    assert again is first and store.stats == {"computed": 1, "memory_hits": 1, "evicted": 0, "yielded": 0}
    assert torch.equal(first.outputs[0], torch.relu(first.inputs[0]))
    assert first.inputs_after[0] is first.inputs[0]  # the reference's forward left them as they were


def test_held_references_are_served_without_computing_and_none_until_all_are_held():
    """What a session reads without taking the GPU's lease: references another session made, all or none."""
    store = _store()
    assert store.held([_trial()]) is None and store.stats["computed"] == 0
    made = store.get([_trial()])["full0"]
    assert store.held([_trial()]) == {"full0": made}
    assert store.held([_trial(), _trial(1)]) is None  # one missing: the caller computes under the lease
    assert store.stats == {"computed": 1, "memory_hits": 1, "evicted": 0, "yielded": 0}


def test_a_reference_knows_what_its_comparisons_need_of_it():
    """Computed once with the reference (``compare.reference_side``), not in every comparison against it."""
    ref = _store().get([_trial()])["full0"]
    side = ref.sides[0]
    out = ref.outputs[0].double()
    assert side.finite and int(side.count) == out.numel()
    assert float(side.e_sq) == pytest.approx(float((out * out).sum()), rel=1e-5)
    assert float(side.e_min) == float(out.min()) and float(side.e_max) == float(out.max())


def test_inputs_depend_on_the_secret_salt_and_fresh_inputs_are_never_repeated():
    trial = _trial()
    a, b = _store("one").get([trial])["full0"], _store("two").get([trial])["full0"]
    assert not torch.equal(a.inputs[0], b.inputs[0])  # no candidate can seed torch and make these itself
    assert input_seed("one", trial) != input_seed("one", trial, call=1)
    store = _store("one")
    fresh = [store.fresh(trial, k) for k in range(1, 4)]
    seen = [a.inputs[0], *(f.inputs[0] for f in fresh)]
    assert all(not torch.equal(x, y) for i, x in enumerate(seen) for y in seen[i + 1:])
    assert all(torch.equal(f.outputs[0], torch.relu(f.inputs[0])) for f in fresh)
    assert store.stats["computed"] == 0  # fresh inputs are for one call: never cached


def test_a_reference_that_mutates_its_inputs_hands_out_the_originals_and_expects_the_change():
    ref = _store().get([_trial(source=MUTATES)])["full0"]
    assert torch.equal(ref.inputs_after[0], ref.inputs[0] * 2)
    assert torch.equal(ref.outputs[0], torch.relu(ref.inputs_after[0]))


def test_least_recently_used_references_go_first_past_the_bound():
    one = _store().get([_trial(0)])["full0"].nbytes
    store = _store(max_bytes=int(2.5 * one))
    for k in range(3):
        store.get([_trial(k)])
    assert store.stats["evicted"] == 1
    store.get([_trial(2)])  # kept
    store.get([_trial(0)])  # evicted: computed again
    assert store.stats["computed"] == 4 and store.stats["memory_hits"] == 1


def test_a_failing_reference_names_its_task_and_trial():
    with pytest.raises(TaskError, match="task7, trial full0: RuntimeError: reference is broken"):
        _store().get([_trial(7, source=BROKEN)])


def test_references_yield_the_device_to_the_candidates_when_it_runs_short():
    """A judge shares its GPU with the candidates' children (other processes): while less than the floor of the
    device is free it gives references back, least recently used first, never more than it must."""
    one = _store().get([_trial(0)])["full0"].nbytes
    device = 10 * one  # a device of ten references' bytes, of which others use six
    seen = []

    def free_share(dev, floor):
        seen.append((dev, floor))
        return (device - 6 * one - store._bytes) / device

    store = ReferenceStore("cpu", True, 1 << 30, "s", free_share=free_share)
    for k in range(4):
        store.get([_trial(k)])
    # 4 held: 0% free; 3: 10%; 2: 20%; 1: 30%, above the floor
    assert store.yield_memory(floor=0.25) == 3 and seen[-1] == ("cpu", 0.25)
    assert store.stats["yielded"] == 3 and store.held([_trial(3)]) is not None and store.held([_trial(2)]) is None
    assert store.yield_memory(floor=0.25) == 0  # enough free: nothing more goes
    assert store.yield_memory(floor=0.9) == 1 and store.yield_memory(floor=0.9) == 0  # short, and nothing left


def test_off_a_gpu_nothing_is_yielded():
    store = _store()
    store.get([_trial()])
    assert store.yield_memory() == 0 and store.held([_trial()]) is not None


def test_a_shifted_trial_outside_the_tasks_domain_is_judged_unshifted():
    """Values shifted by 100 RMS leave a loss over probabilities (its reference raises) or an exp (not finite): the
    trial keeps its plain values there, and where the reference runs it keeps the shift."""
    probabilities = RELU.replace("return torch.relu(x)", "return torch.nn.functional.binary_cross_entropy("
                                 "x, torch.ones_like(x))").replace("torch.randn(", "torch.rand(")
    exp = RELU.replace("return torch.relu(x)", "return torch.exp(x)")
    store = _store()
    for source in (probabilities, exp):
        shifted = dataclasses.replace(_trial(source=source), shift=100.0)
        ref = store.get([shifted])["full0"]
        assert float(ref.inputs[0].max()) < 10 and torch.isfinite(ref.outputs[0]).all()
    kept = store.get([dataclasses.replace(_trial(source=RELU), task_key="relu_shifted", shift=100.0)])["full0"]
    x = kept.inputs[0]
    assert float(x.max()) > 90 and torch.equal(kept.outputs[0], torch.relu(x))
    # spread values overflow exp, shifted ones do not: the shift is kept without the spread
    both = store.get([dataclasses.replace(_trial(source=exp), task_key="exp_both", scale=3.0, spread=100.0,
                                          shift=-100.0)])["full0"]
    x = both.inputs[0]
    assert float(x.min()) < -100 and float(x[-1].abs().max()) < 30 and torch.isfinite(both.outputs[0]).all()
    # where the shifted values come out unchanged, a kernel rewriting a clone in place could not show its work
    shrink = RELU.replace("return torch.relu(x)", "return torch.nn.functional.hardshrink(x, 0.5)")
    plain = store.get([dataclasses.replace(_trial(source=shrink), shift=100.0)])["full0"]
    assert float(plain.inputs[0].abs().max()) < 10


def test_a_scaled_trial_whose_values_come_out_unchanged_is_judged_plain():
    """Hardtanh of the x0.01 trial's values is the identity: the trial would ask for a copy of the input, which a
    kernel rewriting ``x.clone()`` in place cannot show it made (no byte changes; on a GPU no store is seen). It
    keeps its plain values; a scaled trial whose values do change keeps its scale, and one outside the domain
    keeps the scale it can (an exp of large values stays the last domain attempt, as before)."""
    hardtanh = RELU.replace("return torch.relu(x)", "return torch.nn.functional.hardtanh(x)")
    store = _store()
    small = store.get([dataclasses.replace(_trial(source=hardtanh), scale=0.01)])["full0"]
    assert float(small.inputs[0].abs().max()) > 0.5  # plain randn, not x0.01
    assert torch.equal(small.outputs[0], torch.nn.functional.hardtanh(small.inputs[0]))
    relu = store.get([dataclasses.replace(_trial(source=RELU), task_key="relu_small", scale=0.01)])["full0"]
    assert float(relu.inputs[0].abs().max()) < 0.1  # ReLU moves values at any scale: the trial keeps x0.01
    exp = RELU.replace("return torch.relu(x)", "return torch.exp(x)")
    large = store.get([dataclasses.replace(_trial(source=exp), task_key="exp_large", scale=1000.0)])["full0"]
    assert float(large.inputs[0].abs().max()) > 100 and not torch.isfinite(large.outputs[0]).all()
