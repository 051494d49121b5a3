"""Whether what a launch wrote is a copy of data it may not pass on as its own (candidate child, after a launch).

A kernel that moves torch's answer (or numpy's, or an earlier call's) into the output has computed nothing; one
that moves it in another arrangement (reversed, shifted, offset, transposed, broadcast) has computed nothing
either. A copy is recognised by an *index map*: where the written values are found in an argument's storage (a
kernel may read past the view it was handed), the source positions are an affine function of the written
element's index (``q = b + sum(a_d * i_d)`` with integer coefficients: every strided re-layout, shift, flip,
transpose, permute or broadcast is one), in the written tensor's own shape or in its flat index cut into rows of
any width. The map is found from a sample of written values (their nearest laundered values, ``RANSAC`` over a
few candidates each), then checked on every written element: at least ``COPY_SHARE`` of them (all of them, under
``ALL_BELOW`` elements) must repeat the laundered value the map points at (a ReLU over torch's values, in
permissive mode, repeats about half of them and stays a kernel's work; a copy or an "x1" kernel repeats all; the
share is what the comparison's L2 bound leaves an attacker nudging values just outside the copy tolerance).
Values are compared as each float type their bytes can be read as, within twice the comparison's tolerance (a
copy nudged by an ulp is still a copy).

Not seen: a copy through an arbitrary permutation (an index tensor the kernel gathers with), which in strict
mode needs torch compute (refused) to make, and in permissive mode is the limit of what a value check can tell.

``echoes`` is the other question, asked of inputs and parameters: which written elements hold an input's bits at
the same flat place (an identity copy of an input is the kernel's, but a torch copy of it in another layout is
torch's work).
"""

from __future__ import annotations

import random
from typing import Any

import torch

_uint8 = torch.uint8
COPY_SHARE = 0.75  # of the written elements repeating the laundered value the map points at: a copy
# Under this many written elements, all of them must repeat it: a ReLU over 16 of torch's values keeps 12 or more
# of them unchanged one time in 26; a copy or an "x1" kernel keeps every one.
ALL_BELOW = 64
PART_SHARE = 0.25  # a source's part of a copy, counted towards COPY_SHARE with the other sources' parts
PIECE_SHARE = 0.10  # ... made of up to MAX_PIECES affine maps, each explaining at least this share (a rotation)
MAX_PIECES = 4
SAMPLES = 48       # written elements an index map is fitted on
CANDIDATES = 3     # nearest laundered values tried per sampled element
TRIES = 48         # RANSAC draws per index system
MAX_SYSTEMS = 16   # index systems tried per source (the shape, then rows of each width)
# A written value this close to a laundered one is that value (the tolerance of the float type the bytes are read
# as, twice the comparison's: a copy nudged just outside the comparison's band is still a copy).
COPY_RTOL = {torch.float64: 2e-6, torch.float32: 2e-4, torch.float16: 2e-2, torch.bfloat16: 2e-2}
REINTERPRET = {8: (torch.float64,), 4: (torch.float32,), 2: (torch.float16, torch.bfloat16)}  # by element size


def storage_values(t: torch.Tensor, mask: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole storage behind ``t`` as elements of ``dtype`` (aligned as ``t``'s elements are), and for each
    element the byte classes of ``mask`` (one row per element)."""
    size = torch.empty((), dtype=dtype).element_size()
    flat = torch.empty(0, dtype=_uint8, device=t.device).set_(t.untyped_storage())
    start = (t.storage_offset() * t.element_size()) % size
    count = (flat.numel() - start) // size
    data = flat[start:start + count * size]
    return data.view(dtype), mask[start:start + count * size].reshape(count, size)


def copied_from(dst: torch.Tensor, elems: torch.Tensor, sources: list[tuple[torch.Tensor, torch.Tensor]],
                laundered: torch.Tensor) -> int | None:
    """The laundered class the elements of ``dst`` a launch wrote (``elems``, a mask shaped like ``dst``) copy
    from one of ``sources`` ((tensor handed to the launch, its storage's byte mask)), or None."""
    where = elems.reshape(-1).nonzero().reshape(-1)
    if not where.numel():
        return None
    written = dst.detach().reshape(-1)[where]
    count = written.numel()
    explained = torch.zeros(count, dtype=torch.bool, device=written.device)  # over all sources: parts add up
    copied = 0
    seen: set = set()
    for src, mask in sources:
        key = (src.untyped_storage().data_ptr(), src.dtype)
        if key in seen:
            continue
        seen.add(key)
        for w_dtype, s_dtype, rtol in _readings(written.dtype, src.dtype):
            values, classes = storage_values(src, mask, s_dtype)
            bad = torch.isin(classes, laundered.to(classes.device)).any(dim=-1)
            if not bool(bad.any()):
                continue
            found = _mapped_copy(dst, where, _as(written, w_dtype).double(), values.double(), bad, rtol)
            if found is None:
                continue
            same, at = found
            rows = classes[at]
            copied = max(copied, int(torch.isin(rows, laundered.to(rows.device)).mul(rows).max()))
            explained |= same
            if int(explained.sum()) >= (count if count < ALL_BELOW else COPY_SHARE * count):
                return copied
    return None


def _as(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``values`` read as ``dtype``: themselves, or their bits reinterpreted (an element of the same size)."""
    return values if values.dtype == dtype else values.contiguous().view(dtype)


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float, floor: float) -> torch.Tensor:
    return ((a - b).abs() <= rtol * b.abs() + floor) | (a == b)


def _mapped_copy(dst: torch.Tensor, where: torch.Tensor, written: torch.Tensor, values: torch.Tensor,
                 bad: torch.Tensor, rtol: float) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Which of ``written`` (at flat indices ``where`` of ``dst``) affine index maps send to a laundered source
    value within ``rtol``, and those source positions, if together they explain at least ``PART_SHARE`` of them
    (the caller adds the parts of all sources up: torch's answer split over two storages, a copy from each); else
    None. Up to ``MAX_PIECES`` maps per source, each found on the elements the earlier ones left and each explaining
    at least ``PIECE_SHARE``: a rotation of torch's answer is two affine pieces of one source (a red team un-rolled
    a third of it: the best single map explained two thirds, under ``COPY_SHARE``)."""
    pool_at = bad.nonzero().reshape(-1)
    pool = values[pool_at]
    finite = torch.isfinite(pool)
    pool, pool_at = pool[finite], pool_at[finite]
    if not pool.numel():
        return None
    order = torch.argsort(pool)
    pool, pool_at = pool[order], pool_at[order]
    floor = _floor(pool, written, rtol)
    n = written.numel()
    explained = torch.zeros(n, dtype=torch.bool, device=written.device)
    position = torch.zeros(n, dtype=torch.int64, device=written.device)
    rng = random.Random(0x5EED)
    for piece in range(MAX_PIECES):
        share = PART_SHARE if piece == 0 else PIECE_SHARE
        found = _one_map(dst, where, written, values, bad, pool, pool_at, rtol, floor, ~explained, share, rng)
        if found is None:
            break
        same, qi = found
        new = same & ~explained
        if int(new.sum()) < PIECE_SHARE * n:
            break
        explained |= new
        position[new] = qi[new]
        if bool(explained.all()):
            break
    if int(explained.sum()) < PART_SHARE * n:
        return None
    return explained, position[explained]


def _floor(pool: torch.Tensor, written: torch.Tensor, rtol: float) -> float:
    """The absolute tolerance under which values count as equal (a copy of near-zero values): ``rtol`` of the
    smaller of the two sides' mean magnitudes. The source's alone was a red team's false rejection: a float64
    storage read as float32 halves holds values up to ~1e19 (its mean made the floor ~5e14, so every written value
    was "equal" to the halves' zeros, and an honest kernel handed ``x.double()`` was a copy)."""
    scale = float(pool.abs().mean())
    usable = written[torch.isfinite(written)]
    if usable.numel():
        scale = min(scale, float(usable.abs().mean()))
    return rtol * scale + 1e-30


def _one_map(dst: torch.Tensor, where: torch.Tensor, written: torch.Tensor, values: torch.Tensor,
             bad: torch.Tensor, pool: torch.Tensor, pool_at: torch.Tensor, rtol: float, floor: float,
             among: torch.Tensor, share: float, rng: random.Random) -> tuple[torch.Tensor, torch.Tensor] | None:
    """One affine index map fitted on a sample of the written elements ``among`` (a mask over ``written``): which
    written elements it sends to an equal laundered value, and where; None unless at least ``share`` of the
    sample agree."""
    picks = _samples(written, among)
    if picks.numel() < 2:
        return None
    candidates = _candidates(written[picks], pool, pool_at, rtol, floor)
    if sum(1 for c in candidates if c) < share * len(candidates):
        return None  # most written values are nowhere in this source's laundered data: no part of a copy
    for shape in _index_shapes(dst):
        coeffs = _fit(_index(where[picks].cpu(), shape), candidates, rng, share)
        if coeffs is None:
            continue
        # the map, on every written element (a product and a sum: CUDA has no int64 matmul, "addmm_cuda" for Long)
        q = (_index(where, shape) * coeffs.to(where.device)).sum(dim=-1)
        inside = (q >= 0) & (q < values.numel())
        qi = q.clamp(0, values.numel() - 1)
        same = inside & bad[qi] & _close(written, values[qi], rtol, floor)
        if int((same & among).sum()) >= share * int(among.sum()):
            return same, qi
    return None


def _samples(written: torch.Tensor, among: torch.Tensor | None = None) -> torch.Tensor:
    """Up to ``SAMPLES`` written elements spread over the launch's writes (those ``among``), finite and nonzero (a
    zero is everywhere)."""
    usable = torch.isfinite(written) & (written != 0)
    usable = (usable if among is None else usable & among).nonzero().reshape(-1)
    if usable.numel() <= SAMPLES:
        return usable
    # Integer positions: a float32 linspace rounds its end past the last index above 2**24 elements (an honest
    # ReLU over 64M elements: IndexError here, a device-side assert on a GPU, where it failed timed calls).
    last = usable.numel() - 1
    return usable[torch.arange(SAMPLES, dtype=torch.int64, device=usable.device) * last // (SAMPLES - 1)]


def _candidates(sampled: torch.Tensor, pool: torch.Tensor, pool_at: torch.Tensor, rtol: float,
                floor: float) -> list[list[int]]:
    """Per sampled value, the source positions of up to ``CANDIDATES`` nearest laundered values within ``rtol``."""
    at = torch.searchsorted(pool, sampled)
    around = (at[:, None] + torch.arange(-CANDIDATES, CANDIDATES, device=at.device)).clamp(0, pool.numel() - 1)
    near, positions = pool[around].tolist(), pool_at[around].tolist()
    found = []
    for v, vals, where in zip(sampled.tolist(), near, positions):
        ranked = sorted({(abs(p - v), q) for p, q in zip(vals, where) if abs(p - v) <= rtol * abs(v) + floor})
        found.append([q for _, q in ranked[:CANDIDATES]])
    return found


def _index_shapes(dst: torch.Tensor) -> list[tuple[int, ...]]:
    """The shapes a written element's index is read in, as the regressors of an affine map: ``dst``'s own, then
    its flat index as (row, column) for each row width that divides its size (nearest square first)."""
    n = max(1, dst.numel())
    shapes = [tuple(dst.shape) or (1,)] + [(n // c, c) for c in _divisors(n) if (n // c, c) != tuple(dst.shape)]
    return shapes[:MAX_SYSTEMS]


def _index(flat: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Flat indices as rows ``(1, i_0, i_1, ...)`` of their index in ``shape`` (int64)."""
    idx = torch.stack(torch.unravel_index(flat, shape), dim=-1) if len(shape) > 1 else flat[:, None]
    return torch.cat([torch.ones_like(flat)[:, None], idx.to(torch.int64)], dim=-1)


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` between 2 and ``n - 1``, nearest the square root first (the likeliest row widths)."""
    small = [c for c in range(2, int(n ** 0.5) + 1) if n % c == 0]
    found = sorted(set(small + [n // c for c in small]))
    return sorted(found, key=lambda c: abs(c * c - n))


def _fit(rows: torch.Tensor, candidates: list[list[int]], rng: random.Random,
         share: float = PART_SHARE) -> torch.Tensor | None:
    """Integer coefficients ``a`` with ``rows @ a`` a candidate position for the most sampled elements (RANSAC),
    if at least ``share`` of them, or None. The best of all draws, not the first good enough: when a source
    holds part of a copy, samples of the other parts find near values in it by chance (a dense pool), and a
    threshold on those would miss the part's map. A constant map (every element from one position) is no copy of
    several elements: it only ever matched near-zero values to one zero."""
    usable = [k for k, c in enumerate(candidates) if c]
    dims = rows.shape[1]
    if len(usable) < max(2, dims):
        return None
    x = rows.double().cpu()
    best, best_hits = None, 0
    for _ in range(TRIES):
        chosen = rng.sample(usable, min(len(usable), dims + 1))
        target = torch.tensor([float(rng.choice(candidates[k])) for k in chosen], dtype=torch.float64)
        solution = torch.linalg.lstsq(x[chosen], target[:, None]).solution.reshape(-1)
        coeffs = solution.round()
        if not torch.allclose(x[chosen] @ coeffs, target) or not bool(coeffs[1:].any()):
            continue
        predicted = (x @ coeffs).long().tolist()
        hits = sum(1 for k in usable if predicted[k] in candidates[k])
        if hits > best_hits:
            best, best_hits = coeffs.long(), hits
            if hits == len(usable):
                break
    return best if best_hits >= share * len(candidates) else None


def _readings(written: torch.dtype, source: torch.dtype) -> list[tuple[torch.dtype, torch.dtype, float]]:
    """(written as, source storage as, tolerance) pairs a copy is looked for under: the values themselves when
    both are floats (a cast is a copy), and the bits read as each float type of the written element's size, on
    both sides (an integer view of float data copied is still that data)."""
    size = torch.empty((), dtype=written).element_size()
    pairs = [(written, source)] if written.is_floating_point and source.is_floating_point else []
    pairs += [(f, f) for f in REINTERPRET.get(size, ()) if (f, f) not in pairs]
    return [(w, s, max(COPY_RTOL.get(w, 2e-4), COPY_RTOL.get(s, 2e-4))) for w, s in pairs]


def echoes(dst: torch.Tensor, elems: torch.Tensor, given: list[torch.Tensor], is_source: Any) -> torch.Tensor | None:
    """Which elements of ``dst`` the launch wrote (``elems``) hold the same bits, at the same flat position, as an
    argument ``is_source`` accepts (an input or a parameter) of the same dtype (a mask shaped like ``dst``), or
    None."""
    found = None
    flat = dst.detach().reshape(-1)
    for src in given:
        if src.dtype != dst.dtype or not src.numel() or not is_source(src):
            continue
        n = min(src.numel(), dst.numel())
        same = torch.zeros(dst.numel(), dtype=torch.bool, device=dst.device)
        a, b = flat[:n], src.detach().reshape(-1)[:n]
        same[:n] = (a.view(_uint8).reshape(n, -1) == b.view(_uint8).reshape(n, -1)).all(dim=-1) if \
            a.dtype != torch.bool else a == b
        same = same.reshape(dst.shape) & elems
        found = same if found is None else found | same
    return found if found is not None and bool(found.any()) else None
