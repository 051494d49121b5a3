"""Compare a candidate's outputs with the reference's, in the trusted parent, with plain torch.

The parent never imported candidate code, so nothing here can have been patched. Files written by the child
are loaded with ``torch.load(weights_only=True)`` (no pickled code runs) and every value must be a plain
``torch.Tensor``. Checks, in order, each with its flag:

  inputs unchanged (INPUT_MUTATION), output count / plain tensors (NOT_PLAIN_TENSOR), device, shape, dtype,
  NaN/Inf where the reference is finite (NONFINITE_OUTPUT), constant output where the reference varies
  (DEGENERATE_OUTPUT), elementwise ``|a-e| <= atol + rtol*|e|`` (OUTPUT_MISMATCH, TINY_MISMATCH on the tiny
  stage), for tiny-magnitude references (max|e| < 10*atol) a normalized error
  ``max|a-e| / max|e| <= 10*rtol``, so an all-zero answer cannot pass on atol alone, and on every output a
  norm-based relative error ``||a-e||_2 <= rtol * ||e||_2`` (``NORM_RTOL_FACTOR`` x the dtype's rtol): an error
  spread evenly over many small values (fp16 arithmetic in an fp32 task, dropped small terms) stays inside the
  elementwise band but not inside the norm.
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


def _check_inputs(before: list, after: Any) -> Mismatch | None:
    if not isinstance(after, list) or len(after) != len(before):
        return Mismatch(Flag.INPUT_MUTATION, "inputs after the forward pass could not be checked")
    for i, (b, a) in enumerate(zip(before, after)):
        if not isinstance(b, torch.Tensor):
            continue
        if type(a) is not torch.Tensor or a.shape != b.shape or a.dtype != b.dtype or not _same(a, b):
            return Mismatch(Flag.INPUT_MUTATION, f"input {i} was modified by the forward pass")
    return None


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))) and bool(
            torch.equal(torch.isnan(a), torch.isnan(b)))
    return bool(torch.equal(a, b))


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
    return _check_values(i, e.double(), a.double(), _tol(atol, e.dtype), _tol(rtol, e.dtype), stage)


def _tol(table: dict[str, float], dtype: torch.dtype) -> float:
    name = str(dtype).removeprefix("torch.")
    return table.get(name, max(table.values()))


def _check_values(i: int, e: torch.Tensor, a: torch.Tensor, atol: float, rtol: float,
                  stage: str) -> Mismatch | None:
    e_finite, a_finite = torch.isfinite(e), torch.isfinite(a)
    if bool((e_finite & ~a_finite).any()):
        count = int((e_finite & ~a_finite).sum())
        return Mismatch(Flag.NONFINITE_OUTPUT, f"output {i} has {count} NaN/Inf values where the reference is finite")
    if not bool(torch.equal(e.isnan(), a.isnan())) or not bool(torch.equal(e[~e_finite], a[~e_finite])):
        return Mismatch(Flag.OUTPUT_MISMATCH, f"output {i}: NaN/Inf values differ from the reference")
    e, a = e[e_finite], a[e_finite]
    if e.numel() == 0:
        return None
    e_max = float(e.abs().max())
    if e.numel() > 1 and float(e.max() - e.min()) > 1e-6 * max(e_max, 1e-30) and bool((a == a[0]).all()):
        return Mismatch(Flag.DEGENERATE_OUTPUT, f"output {i} is constant ({float(a[0]):.4g}) but the reference "
                                                f"varies (range {float(e.min()):.4g} to {float(e.max()):.4g})")
    diff = (a - e).abs()
    bad = diff > atol + rtol * e.abs()
    flag = Flag.TINY_MISMATCH if stage == "tiny" else Flag.OUTPUT_MISMATCH
    if bool(bad.any()):
        j = int(diff.argmax())
        return Mismatch(flag, f"output {i}: {int(bad.sum())}/{bad.numel()} values off, max abs error "
                              f"{float(diff[j]):.3g} (expected {float(e[j]):.6g}, got {float(a[j]):.6g}; "
                              f"atol={atol:g} rtol={rtol:g})")
    if 0 < e_max < SMALL_SCALE_FACTOR * atol:
        normalized = float(diff.max()) / e_max
        if normalized > NORMALIZED_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: small-magnitude output (max |ref| {e_max:.3g}) with normalized "
                                  f"error {normalized:.3g} > {NORMALIZED_RTOL_FACTOR * rtol:g}")
    e_norm = float(torch.linalg.vector_norm(e))
    if e_norm > 0:
        relative = float(torch.linalg.vector_norm(diff)) / e_norm
        if relative > NORM_RTOL_FACTOR * rtol:
            return Mismatch(flag, f"output {i}: relative L2 error {relative:.3g} > {NORM_RTOL_FACTOR * rtol:g} "
                                  "(every value is close, but the error is systematic: lower precision?)")
    return None
