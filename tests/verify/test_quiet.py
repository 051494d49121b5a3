"""The keyed checksum of quiet memory (``child/quiet.py``): equal bytes sum equal, and any one change, a word
moved to another position, or a change in the last bytes that make no whole word does not; across chunks too."""

import pytest
import torch

from tritonrl.verify.child import quiet


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(quiet, "CHUNK_WORDS", 8)  # 8 words a chunk, 4 chunks a group: every path on small data
    monkeypatch.setattr(quiet, "_CHUNK_WEIGHTS", {})


@pytest.mark.parametrize("nbytes", [0, 3, 4, 31, 32, 33, 128, 131, 4 * 8 * 9 + 6])
def test_a_checksum_sees_every_change(small_chunks, nbytes):
    data = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=torch.Generator().manual_seed(nbytes))
    total = quiet.checksum(data)
    assert quiet.checksum(data.clone()) == total
    assert quiet.checksum(data.untyped_storage()) == total
    for at in range(nbytes):
        changed = data.clone()
        changed[at] ^= 1 << (at % 8)
        assert quiet.checksum(changed) != total, f"a change of byte {at} of {nbytes} went unseen"
    words = nbytes // 4
    for a, b in ((0, words - 1), (1, words // 2), (words - 2, words - 1)):
        if 0 <= a < b < words and not torch.equal(data[4 * a:4 * a + 4], data[4 * b:4 * b + 4]):
            moved = data.clone()
            moved[4 * a:4 * a + 4], moved[4 * b:4 * b + 4] = data[4 * b:4 * b + 4], data[4 * a:4 * a + 4]
            assert quiet.checksum(moved) != total, f"words {a} and {b} swapped went unseen"


def test_weights_grow_with_the_storages_and_sums_do_not_depend_on_the_order(monkeypatch):
    """The weights are made as long as the longest storage so far needs (a whole chunk's took 76 ms of every CPU
    child): a sum is the same whether the weights were made for a shorter storage first or a longer one."""
    monkeypatch.setattr(quiet, "MIN_WEIGHTS", 2)
    rng = torch.Generator().manual_seed(0)
    small, large = (torch.randint(0, 256, (n,), dtype=torch.uint8, generator=rng) for n in (12, 4 * 3000 + 2))
    monkeypatch.setattr(quiet, "_CHUNK_WEIGHTS", {})
    small_first = quiet.checksum(small), quiet.checksum(large)
    assert quiet._CHUNK_WEIGHTS[small.device].numel() == 4096  # 3000 words: the next power of two
    monkeypatch.setattr(quiet, "_CHUNK_WEIGHTS", {})
    large_sum = quiet.checksum(large.clone())
    large_first = quiet.checksum(small.clone()), large_sum
    monkeypatch.setattr(quiet, "_CHUNK_WEIGHTS", {})
    assert quiet.checksum(small) == small_first[0] and quiet._CHUNK_WEIGHTS[small.device].numel() == 4
    assert small_first == large_first
