"""The canaries past each storage a watched launch is handed (``child/guards.py``), a GPU's bounds check: here on
host memory laid out as the judge's arena is (storages at multiples of 256 bytes), since the monitor sets them
only around launches on a GPU (under the CPU interpreter ``bounds.py`` checks every address)."""

import ctypes

import torch

from tritonrl.verify.child import guards


def _arena(nbytes: int = 8192) -> tuple[torch.Tensor, int]:
    backing = torch.zeros(nbytes + guards.GUARD_ALIGN, dtype=torch.uint8)
    return backing, backing.data_ptr() + (-backing.data_ptr()) % guards.GUARD_ALIGN


def _slot(base: int, offset: int, n: int) -> torch.Tensor:
    """``n`` float32 over the arena's memory at ``offset``: a storage of its own, as each arena slot is."""
    return torch.frombuffer((ctypes.c_ubyte * (4 * n)).from_address(base + offset), dtype=torch.float32)


def _past(t: torch.Tensor, k: int = 0) -> torch.Tensor:
    """The float32 ``k`` elements past ``t``'s end (what an unmasked last block reaches)."""
    return torch.frombuffer((ctypes.c_ubyte * 4).from_address(t.data_ptr() + 4 * (t.numel() + k)),
                            dtype=torch.float32)


def test_a_store_past_a_handed_tensor_is_seen_and_every_guard_gets_its_bytes_back():
    backing, base = _arena()
    x, out = _slot(base, 0, 257), _slot(base, 1280, 257)  # 2^8 + 1 elements: 252 bytes short of a boundary
    x.copy_(torch.randn(257))
    before = backing.clone()
    placed = guards.place([x, out], device_type="cpu")
    assert len(placed) == 2
    assert abs(float(_past(x)[0])) > 1e18 and abs(float(_past(out)[0])) > 1e18  # a load there: far off
    assert int(_past(x).view(torch.int32)) != int(_past(out).view(torch.int32))  # a guard's bytes its own
    out.copy_(x.relu())  # an honest launch: inside what it was handed
    assert guards.lift(placed) == []
    at = out.data_ptr() - backing.data_ptr()
    changed = backing.ne(before)
    changed[at:at + 4 * 257] = False
    assert not changed.any()  # only the output's own bytes changed: the guards hold what they held

    placed = guards.place([x, out], device_type="cpu")
    _past(out, 3).copy_(torch.relu(_past(x, 3)))  # the unmasked tail: a stray lane's store past the output
    assert guards.lift(placed) == [out.untyped_storage().data_ptr()]
    assert torch.equal(backing[at + 4 * 257:][:252], before[at + 4 * 257:][:252])  # its guard put back


def test_no_guard_where_a_storage_ends_on_a_boundary_or_would_cover_another_handed_storage():
    backing, base = _arena()
    whole = _slot(base, 0, 64)  # 256 bytes: no room after it
    assert guards.place([whole], device_type="cpu") == []
    short, inside = _slot(base, 1024, 10), _slot(base, 1024 + 64, 4)  # the second lies where the first's guard would
    assert guards.place([short, inside], device_type="cpu") == []
    placed = guards.place([short], device_type="cpu")
    assert len(placed) == 1 and guards.lift(placed) == []
    assert guards.place([torch.zeros(3)], device_type="cuda") == []  # a host tensor has no guard on a GPU launch


def test_the_guards_of_one_launch_hold_bytes_of_their_own_drawn_afresh():
    """A kernel passing one guard's canary into another (a ReLU of a positive one, a copy) changes bytes: within a
    launch no two guards share a byte (the thirtieth red team's ``a02``, against guards that alternated two bytes by
    the storages' order), and the bytes change from launch to launch."""
    backing, base = _arena()
    slots = [_slot(base, 1280 * k, 257) for k in range(5)]
    drawn = []
    for _ in range(20):
        placed = guards.place(slots, device_type="cpu")
        bytes_ = [byte for _, _, byte, _ in placed]
        assert len(set(bytes_)) == len(slots) and set(bytes_) <= set(guards.CANARIES)
        drawn.append(tuple(bytes_))
        assert guards.lift(placed) == []
    assert len(set(drawn)) > 1
