"""The task model: one PyTorch program to be rewritten with Triton kernels.

A task is KernelBench's format: Python source that defines ``class Model(nn.Module)``, ``get_inputs()``,
``get_init_inputs()`` and module-level constants (shapes, hyper-parameters). A solution defines
``class ModelNew(nn.Module)`` taking the same constructor arguments as ``Model``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any

ORIGINS = ("bundled", "kernelbench", "kernelbook", "file")


@dataclass(frozen=True)
class KernelTask:
    """One task. ``source`` is the full text of the task module; everything else describes it.

    name: unique within its origin (bundled: ``l2_gemm_bias_relu``; KernelBench: the file stem,
        e.g. ``12_Gemm_Multiply_LeakyReLU``).
    level: 1 single op, 2 fusion, 3 harder (see ``tritonrl.tasks.levels``).
    origin: one of ``ORIGINS``.
    path: where the source was read from, if it came from a file.
    solution: a known-good ``ModelNew`` source (bundled reference, KernelBook Triton code), if any.
    variant: ``""`` for the task as written; otherwise the shape variant's name (``tiny``, ``alt1``, ...).
    meta: free-form extra facts (KernelBook row id, repo name, ...), never used for identity.
    """

    name: str
    level: int
    source: str
    origin: str = "file"
    path: str | None = None
    solution: str | None = None
    variant: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        """Stable identity of (task, variant) for caches: the name plus a hash of the exact source."""
        digest = hashlib.sha256(self.source.encode()).hexdigest()[:16]
        return f"{self.origin}/{self.name}@{self.variant or 'base'}:{digest}"

    def with_variant(self, variant: str, source: str) -> KernelTask:
        """The same task with other shapes: a new source and a variant name."""
        return dataclasses.replace(self, variant=variant, source=source)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelTask:
        return cls(**data)
