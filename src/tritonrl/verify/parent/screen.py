"""The funnel's first two stages, in the caller's process and without torch: extraction and the static checks.

    from tritonrl.verify.parent.screen import screen
    code, rejected = screen(config, completion=text)   # rejected: the verdict (extract or static), or None

``Verifier`` starts every candidate with it; ``tritonrl verify`` calls it before it starts a verifier, so that a
kernel rejected here costs neither the judge's and the children's start nor torch's import (the static checks
answer torch's questions from ``tritonrl.verify.static.facts`` once they have been asked on this machine).
"""

from __future__ import annotations

from tritonrl.config import VerifyConfig
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.stopwatch import Stopwatch
from tritonrl.verify.shared.verdict import Stage, VerifyResult


def screen(config: VerifyConfig, code: str | None = None, completion: str | None = None,
           watch: Stopwatch | None = None) -> tuple[str | None, VerifyResult | None]:
    """``(code, None)`` when the candidate goes on to be run, or ``(code, verdict)`` when extraction or the static
    checks (``config.static_checks``; strict per ``config.strict``) reject it; ``watch`` times the checks."""
    if code is None and completion is not None:
        from tritonrl.extract import extract_code

        code = extract_code(completion)
    if not code:
        return code, VerifyResult(Stage.EXTRACT, flags=[Flag.NO_CODE.value],
                                  error="no Python code defining ModelNew was found in the completion")
    if not config.static_checks:
        return code, None
    from tritonrl.verify.static import diagnosis, run_static_checks

    with (watch or Stopwatch())("static"):
        violations = run_static_checks(code, config.strict)
    if not violations:
        return code, None
    flags = list(dict.fromkeys(Flag(v.flag).value for v in violations))
    return code, VerifyResult(Stage.STATIC, flags=flags, error=diagnosis(violations), code=code)
