"""The tests' one fake verifier: verdicts from a candidate's text alone (no subprocess, no model, milliseconds).

    FakeVerifier()                   # evaluation tests: GOOD -> correct, no class ModelNew -> extraction failure
    FakeVerifier(names_model_new)    # training tests: correct when the text mentions ModelNew
    FakeVerifier(faster_by_text)     # GRPO/RLOO gradients: every text correct, rewards differ from text to text

tests/test_golden.py and the ``slow`` training tests run the real verifier.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from tritonrl.common.reward import SPEEDUP_CI_KEY
from tritonrl.verify.shared.verdict import Stage, VerifyResult


def good_or_broken(text: str) -> VerifyResult:
    """No ``class ModelNew``: an extraction failure; with ``GOOD`` in it: correct; otherwise a compile failure."""
    if "class ModelNew" not in text:
        return VerifyResult(stage=Stage.EXTRACT, flags=["no_code"])
    if "GOOD" in text:
        return VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True, code=text)
    return VerifyResult(stage=Stage.COMPILE, valid=True, flags=["import_error"], code=text)


def names_model_new(text: str) -> VerifyResult:
    """Correct when the text mentions ``ModelNew`` anywhere, else an extraction failure."""
    ok = "ModelNew" in text
    return VerifyResult(stage=Stage.DONE if ok else Stage.EXTRACT, valid=ok, compiled=ok, tiny_correct=ok, correct=ok)


def faster_by_text(text: str) -> VerifyResult:
    """Correct, with a speedup interval whose lower end (1.00 to 1.96) is a hash of the text: two different
    completions of one prompt almost surely earn different rewards, so a GRPO/RLOO group has non-zero advantages
    (a verifier that rewards a group alike gives zero advantages and no gradient)."""
    low = 1.0 + (zlib.crc32(text.encode()) % 97) / 100
    return VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                        speedup=low + 0.05, timing={SPEEDUP_CI_KEY: [low, low + 0.1]})


class FakeVerifier:
    """``verify_many`` judging each item's code (else its completion, as text) with ``judge``; ``calls`` holds
    the size of every batch it was given."""

    def __init__(self, judge: Callable[[str], VerifyResult] = good_or_broken):
        self.judge = judge
        self.calls: list[int] = []

    def verify_many(self, items):
        self.calls.append(len(items))
        return [self.judge(_text(item)) for item in items]


def _text(item) -> str:
    text = item.code if item.code is not None else item.completion
    return text if isinstance(text, str) else str(text)
