"""Kernel verification: a staged, sandboxed, multi-input funnel that judges candidate ``ModelNew`` code.

    from tritonrl.verify import Verifier, VerifyItem
    with Verifier() as verifier:
        result = verifier.verify(task, completion=text)

See ``docs/verifier.md`` for the funnel, the runtime checks and what the sandbox does and does not protect.
The subpackages are the roles (``docs/architecture.md``): ``parent/`` (this process), ``zygote`` (forks the
others), ``judge/``, ``child/`` (the candidate's process), ``static/`` (the parent's checks of the source) and
``shared/`` (what they all use); the ``verify-*`` import contracts of ``pyproject.toml`` say what each may import.
"""

from typing import TYPE_CHECKING

from tritonrl.verify.shared.flags import RATIONALE, Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult

if TYPE_CHECKING:
    from tritonrl.verify.parent.verifier import Verifier, VerifyItem

__all__ = ["RATIONALE", "Flag", "Stage", "Verifier", "VerifyItem", "VerifyResult"]


def __getattr__(name: str):
    # Loaded on first use, so importing a light submodule (flags, result, static) never pulls in torch.
    if name in ("Verifier", "VerifyItem"):
        from tritonrl.verify.parent import verifier

        return getattr(verifier, name)
    raise AttributeError(f"module 'tritonrl.verify' has no attribute {name!r}")
