"""Compare a candidate's outputs with the reference's, in the judge, with plain torch, on the judge's device.

The judge never imports candidate code, so nothing here can have been patched. The candidate's outputs are read
from the arena the judge shares with its child (``tritonrl.verify.shared.arena``), where the child copied them: plain
tensors of the reference's shapes and dtypes, or a description of what came instead (its type, shape, dtype,
device), which fails here. Whether the inputs are unchanged is decided from the arena's input slots against the
judge's own pristine copies (``inputs_changed``). Checks, in order, each with its flag:

  inputs unchanged (INPUT_MUTATION), output count / plain tensors (NOT_PLAIN_TENSOR), device, shape, dtype,
  NaN/Inf where the reference is finite (NONFINITE_OUTPUT), constant output where the reference varies
  (DEGENERATE_OUTPUT), elementwise ``|a-e| <= atol + rtol*max(|e|, s)`` with ``s`` the output's typical
  magnitude (its RMS, at most twice its median nonzero magnitude; OUTPUT_MISMATCH, TINY_MISMATCH on the tiny
  stage), for tiny-magnitude references (max|e| < 10*atol) a normalized error
  ``max|a-e| / max|e| <= 10*rtol``, so an all-zero answer cannot pass on atol alone, and on every output a
  norm-based relative error ``||a-e||_2 <= rtol * ||e||_2`` (``NORM_RTOL_FACTOR`` x the dtype's rtol): an error
  spread evenly over many small values (fp16 arithmetic in an fp32 task, dropped small terms) stays inside the
  elementwise band but not inside the norm.

Why ``max(|e|, s)``: a value that is a long sum (a matmul's or a row reduction's) carries a rounding error
that scales with its terms, not with the value itself; where terms cancel to near zero, an honest fp32 kernel
that sums in another order is off by ~1e-6 of the output's scale, far above ``rtol * |e|``. On an H100 the
bundled matmul (K=4096) and matvec (K=8192) solutions failed ``atol + rtol*|e|`` on 857 of 6.4M and 6 of 16K
values (errors ~1e-3 on outputs of RMS ~100). Measuring against the output's typical magnitude keeps the band
for values at or above it and accepts reordering there; a systematic error still fails the L2 check. The RMS
alone is not that magnitude for a heavy-tailed output (``exp(3x)``: RMS ~2800, median ~1), where it would let 2%
errors through on most values, nor for one with a minority of large channels; hence the cap at twice the median
nonzero magnitude (zeros excluded: after a ReLU the median is 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from tritonrl.verify.shared.flags import Flag

SMALL_SCALE_FACTOR = 10.0  # references with max|e| below this many atols get the normalized check
NORMALIZED_RTOL_FACTOR = 10.0  # normalized error allowed: this many rtols
NORM_RTOL_FACTOR = 1.0  # relative L2 error allowed: this many rtols (fp32: 1e-4; fp16 arithmetic gives ~5e-4)


@dataclass
class Mismatch:
    flag: Flag
    message: str
    relative: float | None = None  # a value mismatch's error relative to the output's scale (precision or bug?)


def compare_trial(ref: dict, got: dict | None, atol: dict[str, float], rtol: dict[str, float],
                  stage: str) -> Mismatch | None:
    """None when the candidate's trial matches the reference; otherwise the first reason it does not."""
    if got is None:
        return Mismatch(Flag.NOT_PLAIN_TENSOR, "outputs are not plain tensors (could not be loaded safely)")
    if "inputs_after" in ref:
        mutated = _check_inputs(ref["inputs_after"], got.get("inputs_after"))
        if mutated:
            return mutated
    expected, actual, devices = ref["outputs"], got.get("outputs"), got.get("devices")
    if not isinstance(actual, list) or len(actual) != len(expected):
        n = len(actual) if isinstance(actual, list) else "?"
        return Mismatch(Flag.SHAPE_MISMATCH, f"forward returned {n} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        problem = _check_output(i, e, a, devices[i] if isinstance(devices, list) and i < len(devices) else None,
                                ref["devices"][i], atol, rtol, stage)
        if problem:
            return problem
    return None


def compare_outputs(expected: list, actual: list, devices: list, atol: dict[str, float], rtol: dict[str, float],
                    stage: str, sides: list | None = None) -> Mismatch | None:
    """None when every output matches; ``actual[i]`` is a tensor on the judge's device, or the name of what came
    instead; ``devices[i]`` the device type it was on in the child; ``sides[i]``: ``reference_side`` of
    ``expected[i]`` when the caller keeps it (None: computed here)."""
    if len(actual) != len(expected):
        return Mismatch(Flag.SHAPE_MISMATCH, f"forward returned {len(actual)} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        problem = _check_output(i, e, a, devices[i] if i < len(devices) else None, e.device.type, atol, rtol, stage,
                                sides[i] if sides else None)
        if problem:
            return problem
    return None


def inputs_changed(pristine: list, seen: list) -> Mismatch | None:
    """The first input the forward pass changed: ``seen`` (the arena's input slots after the call) against
    ``pristine`` (the judge's own copies, as the reference's forward left them), byte for byte."""
    for i, (want, got) in enumerate(zip(pristine, seen)):
        if isinstance(want, torch.Tensor) and not _same_bytes(want, got):
            return Mismatch(Flag.INPUT_MUTATION, f"input {i} was modified by the forward pass")
    return None


def _same_bytes(a: torch.Tensor, b: Any) -> bool:
    if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def _check_inputs(before: list, after: Any) -> Mismatch | None:
    """Each tensor input's digest after the forward (``protocol.tensor_digest``: dtype, shape, bytes) must equal
    the reference's: the same inputs, made from the same seed, unchanged by the reference's forward."""
    if not isinstance(after, list) or len(after) != len(before):
        return Mismatch(Flag.INPUT_MUTATION, "inputs after the forward pass could not be checked")
    for i, (b, a) in enumerate(zip(before, after)):
        if b is not None and a != b:
            return Mismatch(Flag.INPUT_MUTATION, f"input {i} was modified by the forward pass")
    return None


def _check_output(i: int, e: torch.Tensor, a: Any, a_device: str | None, e_device: str,
                  atol: dict[str, float], rtol: dict[str, float], stage: str,
                  side: ReferenceSide | None = None) -> Mismatch | None:
    if type(a) is not torch.Tensor:
        return Mismatch(Flag.NOT_PLAIN_TENSOR, f"output {i} is {a if isinstance(a, str) else type(a).__name__}, "
                                               "not a plain torch.Tensor")
    if a_device != e_device:
        return Mismatch(Flag.DEVICE_MISMATCH, f"output {i} is on {a_device}, expected {e_device}")
    if a.shape != e.shape:
        return Mismatch(Flag.SHAPE_MISMATCH, f"output {i} has shape {tuple(a.shape)}, expected {tuple(e.shape)}")
    if a.dtype != e.dtype:
        return Mismatch(Flag.DTYPE_MISMATCH, f"output {i} has dtype {a.dtype}, expected {e.dtype}")
    if not e.is_floating_point():
        ok = torch.equal(a, e)
        return None if ok else Mismatch(Flag.OUTPUT_MISMATCH, f"output {i} differs (exact comparison)")
    return _check_values(i, e, a, _tol(atol, e.dtype), _tol(rtol, e.dtype), stage, side)


def _tol(table: dict[str, float], dtype: torch.dtype) -> float:
    name = str(dtype).removeprefix("torch.")
    return table.get(name, max(table.values()))


CHUNK = 1 << 16  # CPU: elements compared at a time: cache-sized float32 temporaries (~25x faster than float64)
GPU_CHUNK = 1 << 26  # GPU: whole outputs up to 64M elements in one pass (bounded temporaries)


def _chunk(t: torch.Tensor) -> int:
    return GPU_CHUNK if t.device.type == "cuda" else CHUNK


def _work(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.promote_types(t.dtype, torch.float32))


SCALE_SAMPLES = 1 << 16  # values of the reference sampled (uniformly, fixed seed) for its median magnitude
SCALE_MEDIAN_FACTOR = 2.0  # the scale is the RMS, at most this many median nonzero magnitudes


@dataclass
class ReferenceSide:
    """What a comparison needs of the reference's output alone (``reference_side``): computed once per output,
    with the reference, rather than in every comparison against it. The figures are over its finite values,
    as 0-dim float64 tensors on its device."""

    finite: bool           # every value is finite (the common case: the comparison needs no masks)
    count: torch.Tensor    # how many values are finite
    e_sq: torch.Tensor     # their squared L2 norm
    e_min: torch.Tensor
    e_max: torch.Tensor
    scale: torch.Tensor    # the typical magnitude (``typical_scale``)


def reference_side(e: torch.Tensor) -> ReferenceSide:
    """The reference-only figures of output ``e`` (one host synchronization: whether it is finite everywhere).
    Each chunk in float32 (or the output's wider dtype), the sums across chunks in float64."""
    e = e.reshape(-1)
    wide = {"dtype": torch.float64, "device": e.device}
    inf = float("inf")
    count, e_sq = torch.zeros((), **wide), torch.zeros((), **wide)
    e_min, e_max = torch.full((), inf, **wide), torch.full((), -inf, **wide)
    step = _chunk(e)
    for start in range(0, e.numel(), step):
        chunk = _work(e[start:start + step])
        finite = torch.isfinite(chunk)
        count += finite.sum()
        e_min = torch.minimum(e_min, torch.where(finite, chunk, inf).min().double())
        e_max = torch.maximum(e_max, torch.where(finite, chunk, -inf).max().double())
        chunk = torch.where(finite, chunk, 0.0)
        e_sq += torch.dot(chunk, chunk)
    scale = typical_scale(e, e_sq, count)
    return ReferenceSide(bool(count == e.numel()), count, e_sq, e_min, e_max, scale)


# What ``_check_values`` decides from, in this order: gathered on the outputs' device, chunk by chunk, as tensors,
# and read back at once (one host synchronization per output on a GPU rather than one per figure and chunk).
FACTS = ("nonfinite", "special_differ", "n", "e_min", "e_max", "a_min", "a_max", "a_first", "bad", "worst",
         "worst_e", "worst_a", "diff_sq", "e_sq", "scale")


def value_facts(e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                side: ReferenceSide | None = None) -> dict[str, float]:
    """The comparison's figures for one output (``e`` the reference's, ``a`` the candidate's, same shape and
    dtype; ``side``: ``reference_side(e)``, computed here if not given), over the positions where the reference
    is finite:

    - ``nonfinite``: NaN/Inf in the candidate there; ``special_differ``: the reference's own NaN/Inf positions
      not matched exactly; ``n``: the count of such positions;
    - ``e_min``/``e_max``, ``a_min``/``a_max``, ``a_first`` (the candidate's value at the first one);
    - ``bad``: values with ``|a - e| > atol + rtol * max(|e|, scale)``, ``scale`` the reference's typical
      magnitude (``typical_scale``); ``worst`` (the largest ``|a - e|``) with its ``worst_e``/``worst_a``;
    - ``diff_sq`` and ``e_sq``: the squared L2 norms of the error and of the reference.

    Each chunk in float32 (or the outputs' wider dtype): its rounding is far below any tolerance used; the sums
    across chunks in float64. A reference finite everywhere (``side.finite``) is compared without masks: nine
    passes over the output; the candidate's NaN/Inf show in its range and are counted only then."""
    e, a = e.reshape(-1), a.reshape(-1)
    side = side or reference_side(e)
    wide = {"dtype": torch.float64, "device": e.device}
    acc = {name: torch.zeros((), **wide) for name in ("nonfinite", "special_differ", "bad", "diff_sq", "a_first",
                                                      "worst_e", "worst_a")}
    acc.update(a_min=torch.full((), float("inf"), **wide), a_max=torch.full((), float("-inf"), **wide),
               found=torch.zeros((), dtype=torch.bool, device=e.device), worst=torch.full((), -1.0, **wide))
    step = _chunk(e)
    add = _add_chunk if side.finite else _add_chunk_masked
    for start in range(0, e.numel(), step):
        add(acc, _work(e[start:start + step]), _work(a[start:start + step]), atol, rtol, side.scale)
    acc.update(n=side.count, e_min=side.e_min, e_max=side.e_max, e_sq=side.e_sq, scale=side.scale)
    values = torch.stack([acc[name].to(torch.float64) for name in FACTS]).tolist()  # the one synchronization
    facts = dict(zip(FACTS, values))
    # NaN/Inf in the candidate show in its range and in the error's norm (two witnesses: a NaN compares false
    # with every band, so neither may be left to one reduction's NaN propagation alone).
    if side.finite and not all(math.isfinite(facts[k]) for k in ("a_min", "a_max", "diff_sq")):
        facts["nonfinite"] = float((~torch.isfinite(a)).sum())  # only to say how many
    return facts


def _add_chunk(acc: dict, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float, scale: torch.Tensor) -> None:
    """One chunk of a reference that is finite everywhere."""
    diff = (a - e).abs_()
    acc["bad"] += (diff > _band(e, atol, rtol, scale)).sum()
    low, high = torch.aminmax(a)
    acc["a_min"] = torch.minimum(acc["a_min"], low.double())
    acc["a_max"] = torch.maximum(acc["a_max"], high.double())
    acc["a_first"] = torch.where(acc["found"], acc["a_first"], a[0].double())
    acc["found"] = torch.ones_like(acc["found"])
    _worst(acc, diff, e, a)
    acc["diff_sq"] += torch.dot(diff, diff)


def _add_chunk_masked(acc: dict, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                      scale: torch.Tensor) -> None:
    """One chunk of a reference with NaN/Inf somewhere: those positions must be matched exactly, the others
    compared as usual."""
    finite = torch.isfinite(e)
    same = (e == a) | (e.isnan() & a.isnan())
    acc["special_differ"] = torch.maximum(acc["special_differ"], (~finite & ~same).any().double())
    acc["nonfinite"] += (finite & ~torch.isfinite(a)).sum()
    inf = float("inf")
    acc["a_min"] = torch.minimum(acc["a_min"], torch.where(finite, a, inf).min().double())
    acc["a_max"] = torch.maximum(acc["a_max"], torch.where(finite, a, -inf).max().double())
    first = finite.to(torch.uint8).argmax().reshape(1)  # the first finite position (0 when there is none)
    here = finite.any()
    acc["a_first"] = torch.where(acc["found"] | ~here, acc["a_first"], a.index_select(0, first)[0].double())
    acc["found"] = acc["found"] | here
    diff = torch.where(finite, (a - e).abs_(), 0.0)
    acc["bad"] += ((diff > _band(e, atol, rtol, scale)) & finite).sum()
    _worst(acc, torch.where(finite, diff, -1.0), e, a)
    acc["diff_sq"] += torch.dot(diff, diff)


def _band(e: torch.Tensor, atol: float, rtol: float, scale: torch.Tensor) -> torch.Tensor:
    """How far each value may be off: ``atol + rtol * max(|e|, scale)``."""
    return torch.maximum(e.abs(), scale.to(e.dtype)).mul_(rtol).add_(atol)


def _worst(acc: dict, diff: torch.Tensor, e: torch.Tensor, a: torch.Tensor) -> None:
    top, j = diff.max(dim=0)
    better = top.double() > acc["worst"]
    j = j.reshape(1)
    acc["worst"] = torch.where(better, top.double(), acc["worst"])
    acc["worst_e"] = torch.where(better, e.index_select(0, j)[0].double(), acc["worst_e"])
    acc["worst_a"] = torch.where(better, a.index_select(0, j)[0].double(), acc["worst_a"])


def typical_scale(e: torch.Tensor, e_sq: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    """The output's typical magnitude (a 0-dim float64 tensor on ``e``'s device): its RMS, at most
    ``SCALE_MEDIAN_FACTOR`` x its median nonzero magnitude; 0 when it has no finite values.

    For a sum-like output (Gaussian-ish: twice the median magnitude is 1.35x the RMS; after a ReLU, whose zeros
    do not count, 1.9x) this is the RMS. For a heavy-tailed output (``exp`` of scaled inputs: RMS ~2800, median
    ~1) or one with a minority of large channels (up to half the values), the cap keeps the band tight on the
    bulk of the values, which the RMS alone would open to a few percent of error there."""
    # Not a strided sample: with rows of a multiple of the stride it would see a few columns only.
    if e.numel() <= SCALE_SAMPLES:
        sample = e
    else:
        generator = torch.Generator(device=e.device).manual_seed(0)
        sample = e[torch.randint(e.numel(), (SCALE_SAMPLES,), generator=generator, device=e.device)]
    sample = _work(sample).abs()
    median = torch.where(torch.isfinite(sample) & (sample > 0), sample, float("nan")).nanmedian().double()
    rms = (e_sq / count.clamp_min(1)).sqrt()
    capped = torch.where(median.isnan(), 0.0, torch.minimum(rms, SCALE_MEDIAN_FACTOR * median))
    return torch.where(count > 0, capped, 0.0)


def _check_values(i: int, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                  stage: str, side: ReferenceSide | None = None) -> Mismatch | None:
    f = value_facts(e, a, atol, rtol, side)
    if f["nonfinite"]:
        return Mismatch(Flag.NONFINITE_OUTPUT, f"output {i} has {int(f['nonfinite'])} NaN/Inf values where the "
                                               "reference is finite")
    if f["special_differ"]:
        return Mismatch(Flag.OUTPUT_MISMATCH, f"output {i}: NaN/Inf values differ from the reference")
    n = int(f["n"])
    if n == 0:
        return None
    e_max = max(abs(f["e_min"]), abs(f["e_max"]))
    a_constant = f["a_min"] == f["a_max"] == f["a_first"]
    if n > 1 and f["e_max"] - f["e_min"] > 1e-6 * max(e_max, 1e-30) and a_constant:
        return Mismatch(Flag.DEGENERATE_OUTPUT, f"output {i} is constant ({f['a_first']:.4g}) but the reference "
                                                f"varies (range {f['e_min']:.4g} to {f['e_max']:.4g})")
    worst, expected, got = f["worst"], f["worst_e"], f["worst_a"]
    flag = Flag.TINY_MISMATCH if stage == "tiny" else Flag.OUTPUT_MISMATCH
    if f["bad"]:
        relative = worst / max(abs(expected), f["scale"], 1e-30)
        return Mismatch(flag, f"output {i}: {int(f['bad'])}/{n} values off, max abs error "
                              f"{worst:.3g} (expected {expected:.6g}, got {got:.6g}; "
                              f"atol={atol:g} rtol={rtol:g} x max(|expected|, typical {f['scale']:.3g}))", relative)
    if 0 < e_max < SMALL_SCALE_FACTOR * atol:
        normalized = worst / e_max
        if normalized > NORMALIZED_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: small-magnitude output (max |ref| {e_max:.3g}) with normalized "
                                  f"error {normalized:.3g} > {NORMALIZED_RTOL_FACTOR * rtol:g}")
    if f["e_sq"] > 0:
        relative = (f["diff_sq"] / f["e_sq"]) ** 0.5
        if relative > NORM_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: relative L2 error {relative:.3g} > {NORM_RTOL_FACTOR * rtol:g} "
                                  "(every value is close, but the error is systematic: lower precision?)", relative)
    return None
