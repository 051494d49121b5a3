"""Typed results of verification: the funnel stage reached, named flags, errors, runtimes.

The funnel, cheapest first; verification stops at the first stage that fails:

    extract -> static -> compile -> tiny -> full -> timing -> done

``VerifyResult.stage`` is the stage that failed, or ``done`` when every enabled stage passed.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

MAX_ERROR_CHARS = 500  # a verdict's error text: enough for the exception, the candidate's lines, the mismatch


def clip_words(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` whole when it fits ``limit`` characters, else cut at the last space before it, with "...": never
    mid-word (a word longer than the limit is cut, as nothing else can be done)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 2)  # the last space at or before where "..." must start
    return (text[:cut] if cut > 0 else text[: limit - 3]).rstrip(" ,;:") + "..."


class Stage(str, Enum):
    EXTRACT = "extract"   # no code could be extracted from the completion (a format error)
    STATIC = "static"     # the code failed a static check (no Triton kernel, PyTorch fallback, tampering, ...)
    COMPILE = "compile"   # the module failed to import, or ModelNew failed to construct
    TINY = "tiny"         # wrong, crashed or hung on the tiny shape variant
    FULL = "full"         # wrong, crashed or hung on the full multi-input trials
    TIMING = "timing"     # right on every trial, but the timed calls failed or did other work: not correct
    DONE = "done"         # every enabled stage passed

    @property
    def order(self) -> int:
        return list(Stage).index(self)


@dataclass
class VerifyResult:
    """The verdict on one candidate.

    valid: code was extracted and passed the static checks (a real Triton kernel, no forbidden constructs).
    compiled: the module imported and ModelNew was constructed.
    tiny_correct: outputs matched on the tiny shape variant.
    correct: outputs matched on every full trial (and every runtime check held); None when ``declined``.
    declined: why the task could not be judged on this device (a CPU: sizes over its budget that no reduction
        fits), decided from the task before any candidate code ran; None for a verdict. A declined result is
        neither correct nor wrong: ``correct`` is None, flag ``declined``, and reports leave it out of every rate.
    flags: named reasons (values of ``tritonrl.verify.shared.flags.Flag``), e.g. ``no_triton_launch``.
    error: a concise, model-readable message: exception type, message and the candidate's relevant lines.
    runtime_ms / ref_runtime_ms: measured on a GPU; ``None`` when timing is unavailable (CPU) or skipped.
    speedup: ref_runtime_ms / runtime_ms, or ``None``.
    reward: not the verifier's: filled in by callers (training, evaluation, the CLI) with
        ``tritonrl.common.reward.compute_reward``, a pure function of the fields above; None until then.
    timing: extra facts of the measurement (GPU name, trials, spread), empty when not timed.
    """

    stage: Stage
    valid: bool = False
    compiled: bool = False
    tiny_correct: bool = False
    correct: bool | None = False
    flags: list[str] = field(default_factory=list)
    error: str | None = None
    runtime_ms: float | None = None
    ref_runtime_ms: float | None = None
    speedup: float | None = None
    reward: float | None = None
    code: str | None = None
    timing: dict[str, Any] = field(default_factory=dict)
    elapsed_s: float | None = None
    declined: str | None = None

    @property
    def format_ok(self) -> bool:
        """Code was found in the completion (the extract stage passed)."""
        return self.stage != Stage.EXTRACT

    def to_dict(self, include_code: bool = False) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["stage"] = self.stage.value
        if not include_code:
            data.pop("code")
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VerifyResult:
        data = dict(data)
        data["stage"] = Stage(data["stage"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
