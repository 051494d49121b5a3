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
