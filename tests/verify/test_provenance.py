"""Byte provenance around one launch (``tritonrl.verify.child.provenance.credit_launch``), without a child.

A copy kernel is recognised by its writes repeating a source's values at the same flat positions; one element
written is no such evidence: an honest reduction to one value (``max|x|``) writes an input's value, and when
that value sits at position 0 of the input it matched (seen on an H100: ``r3_i8_item_of_kernel_reduction``
rejected as reading input values into Python, in one run of two)."""

import torch

from tritonrl.verify.child.provenance import (
    CONST,
    COPIED,
    ECHO,
    INPUT,
    KERNEL,
    RELAID,
    STALE,
    TAINTS_PERMISSIVE,
    TORCH,
    UNSET,
    CoarseProvenance,
    Provenance,
    credit_launch,
    launch_taint,
    permutes,
    storage_key,
)


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The flat bytes of ``t``'s storage (what the monitor snapshots around a launch)."""
    return torch.tensor([], dtype=torch.uint8).set_(t.untyped_storage())


def _launch(x: torch.Tensor, out: torch.Tensor, write) -> Provenance:
    """``write()`` as a launch handed ``x`` (an input) and ``out`` (fresh): the classes it leaves."""
    prov = Provenance()
    prov.mark(x, INPUT)
    prov.mark(out, UNSET)
    before = {storage_key(out): _bytes(out).clone()}
    write()
    credit_launch(prov, [out], [x, out], before, _bytes)
    return prov


def test_a_one_element_reduction_equal_to_the_first_input_is_the_kernels():
    x = torch.tensor([5.0, -1.0, 2.0, 3.0])  # max|x| is x[0]
    peak = torch.empty(1)
    prov = _launch(x, peak, lambda: peak.copy_(x.abs().max().reshape(1)))
    assert prov.classes(peak) == {KERNEL}


def test_a_copy_of_the_input_is_still_recognised():
    x = torch.randn(64)
    out = torch.empty(64)
    prov = _launch(x, out, lambda: out.copy_(x))
    assert prov.classes(out) & {COPIED, INPUT, ECHO} and KERNEL not in prov.classes(out)


# Issue 38: copies in another arrangement, recognised by an index map (``copies.copied_from``).
def _launder(src: torch.Tensor, out: torch.Tensor, write) -> Provenance:
    """``write()`` as a launch handed ``src`` (torch's data) and ``out`` (fresh): the classes it leaves."""
    prov = Provenance()
    prov.mark(src, TORCH)
    out.fill_(float("nan"))  # the poison
    prov.mark(out, UNSET)
    before = {storage_key(out): _bytes(out).clone()}
    write()
    credit_launch(prov, [out], [src, out], before, _bytes)
    return prov


def test_a_reversed_shifted_or_transposed_copy_is_a_copy():
    src = torch.randn(12, 20)
    for name, made in (("reversed", lambda: src.flip(1)), ("transposed", lambda: src.t()),
                       ("shifted", lambda: src.reshape(-1).roll(1).reshape(12, 20))):
        out = torch.empty(made().shape)
        prov = _launder(src, out, lambda out=out, made=made: out.copy_(made()))
        assert prov.classes(out) == {TORCH}, (name, prov.classes(out))


def test_a_copy_handed_as_a_view_one_element_in_is_a_copy():
    src = torch.randn(240)
    out = torch.empty(240)
    prov = _launder(src[1:], out, lambda: out.copy_(src))
    assert prov.classes(out) == {TORCH}


def test_a_relu_over_torch_data_is_the_kernels():
    src = torch.randn(16, 64)
    out = torch.empty(16, 64)
    prov = _launder(src, out, lambda: out.copy_(src.clamp(min=0)))
    assert prov.classes(out) == {KERNEL}


def test_values_that_happen_to_be_in_a_large_stale_pool_are_no_copy():
    """A pool of many random values holds, within the tolerance, almost any value: only a map makes a copy."""
    pool = torch.randn(200_000)
    out = torch.empty(4096)
    prov = Provenance()
    prov.mark(pool, STALE)
    prov.mark(out, UNSET)
    before = {storage_key(out): _bytes(out).clone()}
    out.copy_(torch.randn(4096))
    credit_launch(prov, [out], [pool, out], before, _bytes)
    assert prov.classes(out) == {KERNEL}


def test_sample_positions_stay_inside_a_launch_of_over_2_24_written_elements():
    """The elements a copy's index map is fitted on are spread over the launch's writes by integer arithmetic: a
    float32 ``linspace`` rounded its last position to one past the end above 2**24 elements (16,777,220 here:
    IndexError on the CPU, a device-side assert on a GPU, which failed honest ReLU and softmax kernels' timed calls
    on an H100, where the unpoisoned output kept some bytes and so ran the copy search)."""
    from tritonrl.verify.child.copies import SAMPLES, _samples

    picks = _samples(torch.ones(16_777_220))
    assert picks.numel() == SAMPLES and int(picks[0]) == 0 and int(picks[-1]) == 16_777_219
    assert bool((picks[1:] > picks[:-1]).all())


def test_class_membership_is_isins_without_its_temporary():
    """``copies.member`` (one comparison a class) agrees with ``torch.isin`` on every byte class."""
    from tritonrl.verify.child.copies import member

    classes = torch.randint(0, 16, (1000, 4), dtype=torch.uint8)
    among = torch.tensor([1, 5, 9, 15], dtype=torch.uint8)
    assert torch.equal(member(classes, among), torch.isin(classes, among))
    assert not member(classes, torch.tensor([], dtype=torch.uint8)).any()


# Issue 51: torch's transpose of a kernel's data between two kernels (2x, transpose, 0.5x) on ``l1_transpose``.
def test_a_permuted_copy_is_told_from_slices_broadcasts_and_kept_layouts():
    x = torch.randn(4, 6)
    assert permutes(torch.empty(6, 4), x.t())  # x.t().contiguous()
    assert permutes(torch.empty(6, 4).t(), x)  # a copy into a transposed view
    assert permutes(torch.empty(2, 3, 4), torch.randn(2, 4, 3).transpose(1, 2))
    assert not permutes(torch.empty(4, 3), x[:, ::2])  # a slice keeps the order
    assert not permutes(torch.empty(4, 6), torch.randn(6))  # a broadcast row
    assert not permutes(torch.empty(4, 6).t(), x.t())  # the same layout on both sides (clone of a view)
    assert not permutes(torch.empty(1, 6), x[:1])


def _kernel_data(prov, t: torch.Tensor) -> torch.Tensor:
    prov.mark(t, KERNEL)
    return t


def test_torchs_transpose_of_a_kernels_data_may_be_returned_but_not_computed_on():
    prov = Provenance()
    buf = _kernel_data(prov, torch.randn(4, 6) * 2)
    moved = buf.t().contiguous()
    prov.fresh(moved)
    prov.copy(moved, buf.t())
    assert prov.classes(moved) == {RELAID}  # an output of it is the kernel's (r11_i8_honest_kernel_then_...)
    assert launch_taint(prov, [moved, torch.empty(6, 4)]) == TORCH  # a kernel fed it computes torch's data
    half = moved.half()  # a cast keeps it re-laid
    prov.fresh(half)
    prov.copy(half, moved)
    assert prov.classes(half) == {RELAID}
    kept = buf.t().clone()  # the same layout: no permutation, still the kernel's
    prov.fresh(kept)
    prov.copy(kept, buf.t())
    assert prov.classes(kept) == {KERNEL}


def test_permissive_mode_and_constants_are_not_relaid():
    prov = Provenance(taints=TAINTS_PERMISSIVE)
    buf = _kernel_data(prov, torch.randn(4, 6))
    moved = buf.t().contiguous()
    prov.fresh(moved)
    prov.copy(moved, buf.t())
    assert prov.classes(moved) == {KERNEL}
    strict = Provenance()
    zeros = torch.zeros(4, 6)
    strict.mark(zeros, CONST)
    moved = zeros.t().contiguous()
    strict.fresh(moved)
    strict.copy(moved, zeros.t())
    assert strict.classes(moved) == {KERNEL}


def test_timed_calls_relay_alike():
    prov = CoarseProvenance()
    buf = torch.randn(4, 6)
    prov.mark(buf, KERNEL)
    moved = buf.t().contiguous()
    prov.copy(moved, buf.t())
    assert prov.classes(moved) == {RELAID}
    assert launch_taint(prov, [moved]) == TORCH


def test_a_phase_keeps_a_devices_unwritten_bytes_per_byte_and_a_timed_call_does_not():
    """A construction (no timer) keeps which bytes of a device's fresh allocation nothing wrote, on that device, as
    the CPU's are kept: a GPU's ``__init__`` reading the written half of a ``torch.empty`` with torch was refused
    (the whole storage judged) and none of it reached the forwards. A timed call does no device work for it.
    "meta" stands for a GPU here."""
    for per_byte in (True, False):
        prov = CoarseProvenance(per_byte=per_byte)
        t = torch.empty(8, device="meta")
        prov.fresh(t)
        flags = prov.unset.get(storage_key(t))
        assert (flags is not None) == per_byte and UNSET in prov.classes(t)
        if per_byte:
            assert flags.device.type == "meta" and flags.shape == (32,)
    host = CoarseProvenance()
    x = torch.empty(8)
    host.fresh(x)
    host.mark(x[:4], KERNEL)
    assert not host.holds_unset(x[:4]) and host.holds_unset(x[4:])


def test_classes_kept_for_an_unchanged_region_are_never_stale():
    """``Provenance.classes`` is kept while the region's mask is unchanged (a forward of 100 launches sorted the
    whole mask of its unchanged input at each one: r16_i8 on an H200); any in-place write to the mask, through any
    view or an index, is seen, and so is a new mask for the storage."""
    x = torch.zeros(8, 8)
    prov = Provenance()
    prov.mark(x, INPUT)
    assert prov.classes(x) == {INPUT} and prov.classes(x) == {INPUT}
    prov.region(x[2:4]).fill_(KERNEL)  # through a view of the mask
    assert prov.classes(x) == {INPUT, KERNEL} and prov.classes(x[2:4]) == {KERNEL}
    assert prov.classes(x[4:]) == {INPUT}
    prov.mask(x)[0:4] = ECHO  # an index into the mask itself
    assert prov.classes(x[0:1]) == {ECHO, INPUT}
    prov.region(x).copy_(torch.full_like(prov.region(x), COPIED))
    assert prov.classes(x) == {COPIED} and prov.classes(x[4:]) == {COPIED}
    prov.forget(storage_key(x))  # the storage moved: a new mask, STALE
    assert prov.classes(x) == {STALE}
    found = prov.classes(x)
    found.add(KERNEL)  # a caller's set is its own
    assert prov.classes(x) == {STALE}
