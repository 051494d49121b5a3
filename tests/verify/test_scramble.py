"""The allocation noise of the CPU child (``child/scramble.py``) and the stores that credit it (``bounds.Stores``):
each fresh allocation holds random bytes of its own while the poison is on, and an unset byte a launch stored the
very value of is the launch's, so an honest kernel whose result equals the noise is not "unwritten"."""

import numpy as np
import torch

from tritonrl.verify.child import scramble
from tritonrl.verify.child.bounds import BoundedMemory, Stores
from tritonrl.verify.child.provenance import KERNEL, TORCH, UNSET, Provenance, credit_launch, storage_key


def _raw(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage())


def test_noise_differs_per_allocation_and_only_while_the_poison_is_on():
    a, b = torch.zeros(4096), torch.zeros(4096)
    scramble.set_enabled(False)
    scramble.fill(a)
    assert not a.any()  # off: the allocation keeps what torch gave it
    scramble.set_enabled(True)
    try:
        scramble.fill(a)
        scramble.fill(b)
        flags = torch.zeros(4096, dtype=torch.bool)
        scramble.fill(flags)
        grown = torch.zeros(8)
        scramble.fill(grown, start=16)  # resize_ grew it from four elements: the first four are kept
    finally:
        scramble.set_enabled(False)
    assert not torch.equal(_raw(a), _raw(b))
    assert _raw(a).float().std() > 50  # bytes over 0..255, not a constant
    assert set(_raw(flags).unique().tolist()) == {0, 1}  # a bool is 0 or 1, never another byte
    assert not grown[:4].any() and _raw(grown)[16:].any()


def test_stores_flag_exactly_the_bytes_stored_to():
    t = torch.zeros(8, dtype=torch.float16)
    stores = Stores()
    base = t.data_ptr()
    stores.add(np.array([base + 2, base + 10], dtype=np.uint64), 2)
    stores.add(np.array([base - 4, base + 64], dtype=np.uint64), 2)  # outside the storage: ignored
    flags = stores.bytes_of(t)
    assert flags.nonzero().flatten().tolist() == [2, 3, 10, 11]


def test_an_unset_element_stored_with_the_bytes_it_held_is_the_kernels_and_torchs_data_is_not():
    out, torchs = torch.full((4,), 7.0), torch.full((4,), 3.0)
    prov = Provenance()
    prov.fresh(out)
    prov.mark(torchs, TORCH)
    before = {storage_key(t): _raw(t).clone() for t in (out, torchs)}
    stores = Stores()  # the launch stored the same values over both: no byte changed
    for t in (out, torchs):
        stores.add(np.arange(t.data_ptr(), t.data_ptr() + 16, 4, dtype=np.uint64), 4)
    credit_launch(prov, [out, torchs], [out, torchs], before, _raw, stored=stores.bytes_of)
    assert prov.classes(out) == {KERNEL}
    assert prov.classes(torchs) == {TORCH}  # rewriting torch's values in place is no work of the kernel's
    prov2 = Provenance()
    prov2.fresh(out)
    credit_launch(prov2, [out], [out], {storage_key(out): _raw(out).clone()}, _raw)
    assert prov2.classes(out) == {UNSET}  # without the stores, what the bytes say


def test_a_load_of_bytes_nothing_wrote_stops_the_kernel_until_the_launch_stores_them():
    from tritonrl.verify.child.bounds import UnsetRead

    t = torch.zeros(4)
    base = t.data_ptr()
    flags = np.zeros(16, dtype=bool)
    flags[8:] = True  # elements 2 and 3 unwritten
    stores = Stores([(base, flags)])
    stores.check_read(np.array([base, base + 4], dtype=np.uint64), 4)  # written elements: fine
    try:
        stores.check_read(np.array([base + 12], dtype=np.uint64), 4)
    except UnsetRead as exc:
        assert f"{base + 12:#x}" in str(exc)
    else:
        raise AssertionError("a load of an unwritten element was let through")
    stores.add(np.array([base + 8, base + 12], dtype=np.uint64), 4)  # the launch writes them first
    stores.check_read(np.array([base + 8, base + 12], dtype=np.uint64), 4)


def test_a_copy_of_a_partly_written_buffer_keeps_its_unwritten_elements_unwritten():
    prov = Provenance()
    src = torch.zeros(2, 3)
    prov.fresh(src)
    prov.mark(src[0, 0], KERNEL)  # one element written
    wide = torch.zeros(2, 3, dtype=torch.float64)
    prov.copy(wide, src)  # a cast: element for element
    assert (prov.region(wide) == UNSET).all(-1).sum() == 5
    relaid = torch.zeros(3, 2).t()
    prov.copy(relaid, src)  # another layout: element for element too
    assert (prov.region(relaid) == UNSET).all(-1).sum() == 5 and UNSET not in prov.classes(relaid[0, 0])
    bytewise = torch.zeros(4)
    prov.fresh(bytewise)
    prov.mark(bytewise.view(torch.uint8)[::4], KERNEL)  # the first byte of each element only
    cast = torch.zeros(4, dtype=torch.float64)
    prov.copy(cast, bytewise)
    assert prov.classes(cast) == {UNSET}  # a byte nothing wrote leaves the element undefined


def test_a_launch_off_the_cpu_yields_no_stores():
    """A launch handed a tensor off the CPU runs compiled: no address it stored to is known, so ``launch`` yields
    None, never a CPU "stored nothing" flag per byte that the monitor's credit would meet a GPU mask with (every
    honest launch on a GPU failed with a device mismatch in ``credit_launch``). "meta" stands for a GPU here."""
    memory = BoundedMemory(real=None)
    with memory.launch([torch.zeros(4)]) as stores:
        assert isinstance(stores, Stores)
    with memory.launch([torch.zeros(4), torch.empty(4, device="meta")]) as stores:
        assert stores is None


def test_a_gpus_poison_takes_turns_and_no_turn_is_the_identity_of_both_max_and_min():
    """On a GPU fresh memory holds one value a forward, not always NaN: NaN is the identity of a GPU's ``max`` and
    ``min`` (maxNum), so a running max started from a fresh output was right in every GPU correctness trial (the
    twenty-ninth red team's ``a04``). Three forwards in a row take all three values; in every dtype of two bytes
    or more, the second is above every input a max sees, the third below every input a min sees."""
    seen = []
    for _ in range(3):
        scramble.next_forward()
        seen.append(scramble.gpu_pattern())
    assert sorted(seen, key=str) == sorted(scramble.GPU_PATTERNS, key=str) and None in seen
    x = torch.randn(4096) * 1e3
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int16, torch.int32,
                  torch.int64):
        values = x.to(dtype)
        high, low = (torch.full((1,), scramble.poison_value(dtype, share), dtype=dtype) for share in (0.5, -0.5))
        assert bool((torch.maximum(values, high) == high).all()), dtype  # a max started there stays there
        assert bool((torch.minimum(values, low) == low).all()), dtype  # and a min started at the other
        assert bool(torch.isfinite(values + high).all())  # a sum is far off, not a NaN
    assert scramble.poison_value(torch.int8, 0.5) is None and scramble.poison_value(torch.bool, 0.5) is None
    for share, sign in ((0.5, 1), (-0.5, -1)):  # one-byte dtypes: bytes that a float32 view reads as a large number
        word = torch.full((4,), scramble.BYTE_PATTERNS[share], dtype=torch.uint8).view(torch.float32)
        assert float(word) * sign > 1e37
