"""Kernel verification: a staged, sandboxed, multi-input funnel that judges candidate ``ModelNew`` code.

    from tritonrl.verify import Verifier, VerifyItem
    with Verifier() as verifier:
        result = verifier.verify(task, completion=text)

See ``docs/verifier.md`` for the funnel, the runtime checks and what the sandbox does and does not protect.
"""

from tritonrl.verify.flags import RATIONALE, Flag
from tritonrl.verify.result import Stage, VerifyResult
from tritonrl.verify.verifier import Verifier, VerifyItem

__all__ = ["RATIONALE", "Flag", "Stage", "Verifier", "VerifyItem", "VerifyResult"]
