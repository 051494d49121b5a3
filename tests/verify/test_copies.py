"""The copy search's shortcuts (``copies._may_map``, ``copied_from``'s ``may_hold``) never change its answer."""

from __future__ import annotations

import random

import pytest
import torch

from tritonrl.verify.child import copies
from tritonrl.verify.child.provenance import _LAUNDERED, INPUT, KERNEL, TORCH, UNSET

WRITES = ("relu", "copy", "flip", "roll", "partial", "nudged", "zeros", "nan")


def _scenario(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dst, the written elements, a laundered source, its byte mask): torch's data, poison or noise in the source,
    and writes that copy it under an index map, in part, nudged, or compute something else."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    n = rng.choice([16, 100, 257, 1024])
    dtype = rng.choice([torch.float32, torch.float16, torch.float64])
    src = torch.randn(n, dtype=dtype) * rng.choice([1.0, 1e-3, 1e4])
    fill = rng.choice(["torch", "poison", "noise"])
    if fill == "poison":
        src.fill_(torch.finfo(dtype).max / 2)
    elif fill == "noise":
        src.view(torch.uint8).copy_(torch.randint(0, 256, (n * src.element_size(),), dtype=torch.uint8))
    mask = torch.full((n * src.element_size(),), TORCH if fill == "torch" else UNSET, dtype=torch.uint8)
    how = WRITES[seed % len(WRITES)]
    written = {"relu": lambda: torch.randn(n, dtype=dtype).clamp_min(0), "copy": src.clone,
               "flip": lambda: src.flip(0), "roll": lambda: src.roll(rng.randrange(1, n)),
               "partial": lambda: torch.cat([src[:n // 2], torch.randn(n - n // 2, dtype=dtype)]),
               "nudged": lambda: src * (1 + rng.choice([1e-5, 1e-3, 1e-1])),
               "zeros": lambda: torch.zeros(n, dtype=dtype),
               "nan": lambda: torch.full((n,), float("nan"), dtype=dtype)}[how]()
    shape = (n // 4, 4) if n % 4 == 0 and rng.random() < 0.5 else (n,)
    elems = torch.rand(shape) < rng.choice([1.0, 0.5])
    return written.reshape(shape).clone(), elems, src, mask


@pytest.mark.parametrize("seed", range(48))
def test_the_pool_gate_and_the_narrowed_classes_leave_the_answer_as_it_was(seed, monkeypatch):
    dst, elems, src, mask = _scenario(seed)
    kinds = {int(mask[0])}
    plain = copies.copied_from(dst, elems, [(src, mask)], _LAUNDERED, lambda t: kinds)
    narrowed_away = copies.copied_from(dst, elems, [(src, mask)], _LAUNDERED, lambda t: {KERNEL, INPUT})
    assert narrowed_away is None  # a storage that may hold no laundered class is not searched
    monkeypatch.setattr(copies, "PRUNED_AT", 0)  # the gate's own test on every pool, however much is near
    gated = copies.copied_from(dst, elems, [(src, mask)], _LAUNDERED)
    monkeypatch.setattr(copies, "_may_map", lambda *args: True)  # no gate: the search as it was
    searched = copies.copied_from(dst, elems, [(src, mask)], _LAUNDERED)
    assert plain == gated == searched


def test_a_copy_of_torchs_answer_is_still_found():
    """The control the test above leans on: the scenarios include copies, and the search finds them."""
    found = [copies.copied_from(dst, elems, [(src, mask)], _LAUNDERED)
             for dst, elems, src, mask in map(_scenario, range(48))]
    assert sum(f is not None for f in found) >= 10


def test_an_honest_write_beside_a_poisoned_pool_is_not_searched():
    """The many-launch honest ReLU (``integrity/r16_i8_relu_one_launch_per_chunk``): its output's unwritten rest
    holds the poison, far from every value it writes; the gate says no map can be found there, so no pool is
    sorted (the cost that timed the fixture out on an H200)."""
    torch.manual_seed(0)
    values = torch.full((4096,), torch.finfo(torch.float32).max / 2, dtype=torch.float64)
    written = torch.randn(1024, dtype=torch.float64).clamp_min(0)
    usable = torch.ones(4096, dtype=torch.bool)
    assert not copies._may_map(written, values, usable, 2e-4, copies._floor(written, 2e-4))
    values[:1024] = written  # ... and where the pool holds what was written, it is searched
    assert copies._may_map(written, values, usable, 2e-4, copies._floor(written, 2e-4))


@pytest.mark.parametrize("pruned_at", [0, copies.PRUNED_AT])
def test_a_copy_split_over_two_sources_is_found_through_the_gate(pruned_at, monkeypatch):
    """Each source holds half of the copy (a part counts from ``PART_SHARE``): the gate must let each half through."""
    monkeypatch.setattr(copies, "PRUNED_AT", pruned_at)
    torch.manual_seed(1)
    first, second = torch.randn(512), torch.randn(512)
    dst = torch.cat([first[:256], second[256:]])
    sources = [(t, torch.full((2048,), TORCH, dtype=torch.uint8)) for t in (first, second)]
    assert copies.copied_from(dst, torch.ones(512, dtype=torch.bool), sources, _LAUNDERED) == TORCH


def _tiles_scrambled(x: torch.Tensor, grid: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(x's transpose, a scratch holding its grid x grid tiles in a scrambled order): what torch copied, tile by tile."""
    rows, cols = x.shape[1] // grid, x.shape[0] // grid
    tiles = [x.t()[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols].contiguous() for i in range(grid) for j in range(grid)]
    order = torch.randperm(len(tiles), generator=torch.Generator().manual_seed(3)).tolist()
    return x.t().contiguous(), torch.cat([tiles[k].reshape(-1) for k in order])


def test_a_copy_in_many_pieces_is_found_by_its_runs():
    """The thirty-eighth red team's transpose: torch's tiles put back in order by a kernel are 64 affine pieces of
    1/64 each, under every share an index map needs; their rows are runs of evenly stepping source positions."""
    torch.manual_seed(0)
    out, scratch = _tiles_scrambled(torch.randn(256, 192), 8)
    mask = torch.full((scratch.numel() * 4,), TORCH, dtype=torch.uint8)
    assert copies.copied_from(out, torch.ones(out.shape, dtype=torch.bool), [(scratch, mask)], _LAUNDERED) == TORCH


def test_selections_and_partial_repeats_are_not_runs():
    """A max-pool picks each window's element by value (its source positions step unevenly), and a ReLU over
    torch's values repeats about half of them: neither is a copy, by runs or by maps."""
    torch.manual_seed(0)
    data = torch.randn(64, 64)
    mask = torch.full((data.numel() * 4,), TORCH, dtype=torch.uint8)
    pooled = torch.nn.functional.max_pool2d(data[None, None], 2)[0, 0].contiguous()
    relu = data.clamp_min(0)
    for written in (pooled, relu):
        assert copies.copied_from(written, torch.ones(written.shape, dtype=torch.bool), [(data, mask)],
                                  _LAUNDERED) is None
    flat = data.reshape(-1)
    pool, pool_at = flat.sort()
    assert copies._moved_runs(pooled.reshape(-1).double(), pool.double(), pool_at) is None
