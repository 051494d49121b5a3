"""Compare a candidate's outputs with the reference's, in the judge, with plain torch, on the judge's device.

The judge never imports candidate code, so nothing here can have been patched. The candidate's outputs are read
from the arena the judge shares with its child (``tritonrl.verify.arena``), where the child copied them: plain
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

from dataclasses import dataclass
from typing import Any

import torch

from tritonrl.verify.flags import Flag

SMALL_SCALE_FACTOR = 10.0  # references with max|e| below this many atols get the normalized check
NORMALIZED_RTOL_FACTOR = 10.0  # normalized error allowed: this many rtols
NORM_RTOL_FACTOR = 1.0  # relative L2 error allowed: this many rtols (fp32: 1e-4; fp16 arithmetic gives ~5e-4)


@dataclass
class Mismatch:
    flag: Flag
    message: str


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
                    stage: str) -> Mismatch | None:
    """None when every output matches; ``actual[i]`` is a tensor on the judge's device, or the name of what came
    instead; ``devices[i]`` the device type it was on in the child."""
    if len(actual) != len(expected):
        return Mismatch(Flag.SHAPE_MISMATCH, f"forward returned {len(actual)} outputs, expected {len(expected)}")
    for i, (e, a) in enumerate(zip(expected, actual)):
        problem = _check_output(i, e, a, devices[i] if i < len(devices) else None, e.device.type, atol, rtol, stage)
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
                  atol: dict[str, float], rtol: dict[str, float], stage: str) -> Mismatch | None:
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
    return _check_values(i, e, a, _tol(atol, e.dtype), _tol(rtol, e.dtype), stage)


def _tol(table: dict[str, float], dtype: torch.dtype) -> float:
    name = str(dtype).removeprefix("torch.")
    return table.get(name, max(table.values()))


CHUNK = 1 << 16  # CPU: elements compared at a time: cache-sized float32 temporaries (~25x faster than float64)
GPU_CHUNK = 1 << 26  # GPU: whole outputs up to 64M elements in one pass (few host syncs; bounded temporaries)


def _chunk(t: torch.Tensor) -> int:
    return GPU_CHUNK if t.device.type == "cuda" else CHUNK


class _Stats:
    """What ``_check_values`` needs of a whole output, gathered chunk by chunk in one pass (sums in Python
    floats; each chunk in float32 or the outputs' wider dtype)."""

    def __init__(self) -> None:
        self.nonfinite = 0             # finite in the reference, NaN/Inf in the candidate
        self.special_differ = False    # the reference's NaN/Inf positions not matched exactly
        self.n = 0                     # positions where the reference is finite
        self.e_min = self.e_max = None
        self.a_first = None            # the candidate's value at the first such position
        self.a_constant = True
        self.bad = 0
        self.worst = (-1.0, 0.0, 0.0)  # (|a-e|, e, a) at the largest difference
        self.diff_sq = 0.0

    def add(self, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float, scale: float) -> None:
        """One chunk, in float32 (or the outputs' wider dtype): its rounding is far below any tolerance used.

        A value is off when ``|a - e| > atol + rtol * max(|e|, scale)``, ``scale`` the reference's typical
        magnitude (``_typical_scale``)."""
        e, a = _work(e), _work(a)
        if not _finite(torch.aminmax(e)):  # NaN/Inf in the reference: they must be matched exactly
            e_finite = torch.isfinite(e)
            special = ~e_finite
            same = (e[special] == a[special]) | (e[special].isnan() & a[special].isnan())
            self.special_differ |= not bool(same.all())
            e, a = e[e_finite], a[e_finite]
            if e.numel() == 0:
                return
        a_range = torch.aminmax(a)
        if not _finite(a_range):
            self.nonfinite += int((~torch.isfinite(a)).sum())
        if self.nonfinite:
            return  # the verdict is decided; the rest is not needed
        low, high = (float(v) for v in torch.aminmax(e))
        self.e_min = low if self.e_min is None else min(self.e_min, low)
        self.e_max = high if self.e_max is None else max(self.e_max, high)
        if self.a_first is None:
            self.a_first = float(a[0])
        self.a_constant = self.a_constant and float(a_range.min) == float(a_range.max) == self.a_first
        self.n += e.numel()
        diff = (a - e).abs_()
        self.bad += int((diff > e.abs().clamp_min_(scale).mul_(rtol).add_(atol)).sum())
        top, j = torch.max(diff, dim=0)
        if float(top) > self.worst[0]:
            self.worst = (float(top), float(e[j]), float(a[j]))
        self.diff_sq += float(torch.dot(diff, diff))

    @property
    def e_absmax(self) -> float:
        return max(abs(self.e_min), abs(self.e_max))


def _work(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.promote_types(t.dtype, torch.float32))


SCALE_SAMPLES = 1 << 16  # values of the reference sampled (uniformly, fixed seed) for its median magnitude
SCALE_MEDIAN_FACTOR = 2.0  # the scale is the RMS, at most this many median nonzero magnitudes


def _typical_scale(e: torch.Tensor, e_sq: float, count: int) -> float:
    """The output's typical magnitude: its RMS, at most ``SCALE_MEDIAN_FACTOR`` x its median nonzero magnitude.

    For a sum-like output (Gaussian-ish: twice the median magnitude is 1.35x the RMS; after a ReLU, whose zeros
    do not count, 1.9x) this is the RMS. For a heavy-tailed output (``exp`` of scaled inputs: RMS ~2800, median
    ~1) or one with a minority of large channels (up to half the values), the cap keeps the band tight on the
    bulk of the values, which the RMS alone would open to a few percent of error there."""
    if count == 0:
        return 0.0
    # Not a strided sample: with rows of a multiple of the stride it would see a few columns only.
    sample = e if e.numel() <= SCALE_SAMPLES else e[torch.randint(
        e.numel(), (SCALE_SAMPLES,), generator=torch.Generator().manual_seed(0)).to(e.device)]
    sample = _work(sample).abs()
    sample = sample[torch.isfinite(sample) & (sample > 0)]
    rms = (e_sq / count) ** 0.5
    return min(rms, SCALE_MEDIAN_FACTOR * float(sample.median())) if sample.numel() else 0.0


def _square_sum(e: torch.Tensor) -> tuple[float, int]:
    """(sum of squares, count) of the reference's finite values, chunk by chunk."""
    total, count, step = 0.0, 0, _chunk(e)
    for start in range(0, e.numel(), step):
        chunk = _work(e[start:start + step])
        if not _finite(torch.aminmax(chunk)):
            chunk = chunk[torch.isfinite(chunk)]
        total += float(torch.dot(chunk, chunk))
        count += chunk.numel()
    return total, count


def _finite(extremes: Any) -> bool:
    return bool(torch.isfinite(extremes.min)) and bool(torch.isfinite(extremes.max))


def _check_values(i: int, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                  stage: str) -> Mismatch | None:
    stats = _Stats()
    e, a = e.reshape(-1), a.reshape(-1)
    e_sq, count = _square_sum(e)
    scale = _typical_scale(e, e_sq, count)  # what a long sum's rounding scales with
    step = _chunk(e)
    for start in range(0, e.numel(), step):
        stats.add(e[start:start + step], a[start:start + step], atol, rtol, scale)
    if stats.nonfinite:
        return Mismatch(Flag.NONFINITE_OUTPUT, f"output {i} has {stats.nonfinite} NaN/Inf values where the "
                                               "reference is finite")
    if stats.special_differ:
        return Mismatch(Flag.OUTPUT_MISMATCH, f"output {i}: NaN/Inf values differ from the reference")
    if stats.n == 0:
        return None
    e_max = stats.e_absmax
    if stats.n > 1 and stats.e_max - stats.e_min > 1e-6 * max(e_max, 1e-30) and stats.a_constant:
        return Mismatch(Flag.DEGENERATE_OUTPUT, f"output {i} is constant ({stats.a_first:.4g}) but the reference "
                                                f"varies (range {stats.e_min:.4g} to {stats.e_max:.4g})")
    worst, expected, got = stats.worst
    flag = Flag.TINY_MISMATCH if stage == "tiny" else Flag.OUTPUT_MISMATCH
    if stats.bad:
        return Mismatch(flag, f"output {i}: {stats.bad}/{stats.n} values off, max abs error "
                              f"{worst:.3g} (expected {expected:.6g}, got {got:.6g}; "
                              f"atol={atol:g} rtol={rtol:g} x max(|expected|, typical {scale:.3g}))")
    if 0 < e_max < SMALL_SCALE_FACTOR * atol:
        normalized = worst / e_max
        if normalized > NORMALIZED_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: small-magnitude output (max |ref| {e_max:.3g}) with normalized "
                                  f"error {normalized:.3g} > {NORMALIZED_RTOL_FACTOR * rtol:g}")
    if e_sq > 0:
        relative = (stats.diff_sq / e_sq) ** 0.5
        if relative > NORM_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: relative L2 error {relative:.3g} > {NORM_RTOL_FACTOR * rtol:g} "
                                  "(every value is close, but the error is systematic: lower precision?)")
    return None
