"""One correctness trial, and how both sides build the same model and inputs for it.

A trial is (task variant, seed, value scale, dtype). The reference process (``tritonrl.verify.reference``)
builds ``Model`` and the inputs; the candidate child (``tritonrl.verify.harness``) builds ``ModelNew`` with the
same seed and the same parameter perturbation, and reads the exact inputs the reference saved. Nothing here
imports candidate code; both processes import this module before anything untrusted runs.
"""

from __future__ import annotations

import hashlib
import os
import types
from dataclasses import asdict, dataclass
from typing import Any

import torch

PERTURB_SCALE = 0.1  # relative size of the noise added to every parameter (see randomize_parameters)


@dataclass(frozen=True)
class TrialSpec:
    """name: "tiny", "full0", ...; stage: "tiny" or "full"; source: the task (variant) module text."""

    name: str
    stage: str
    task_key: str
    source: str
    seed: int
    scale: float = 1.0
    dtype: str | None = None

    def describe(self) -> str:
        parts = [f"trial {self.name}", f"seed {self.seed}"]
        if self.scale != 1.0:
            parts.append(f"inputs x{self.scale:g}")
        if self.dtype:
            parts.append(self.dtype)
        return ", ".join(parts)

    def cache_key(self, device: str, randomize: bool) -> str:
        """Identity of the reference result: (task.key, variant, seed, scale, dtype, device, torch version)."""
        text = "|".join(map(str, (self.task_key, self.seed, self.scale, self.dtype, device, randomize,
                                   torch.__version__, "v1")))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def torch_dtype(name: str | None) -> torch.dtype | None:
    return None if name is None else getattr(torch, name)


def randomize_parameters(model: torch.nn.Module, seed: int) -> None:
    """Perturb every parameter, in registration order, with a generator seeded by ``seed``.

    Why: a candidate that skips LayerNorm's weight and bias is right while they are still 1 and 0; after
    this they are not. Noise is drawn on the CPU so both processes get bit-identical values on any device.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            size = float(param.detach().abs().mean()) if param.numel() else 0.0
            scale = PERTURB_SCALE * (size if size > 0 else 1.0)
            noise = torch.randn(param.shape, generator=gen, dtype=torch.float32) * scale
            param.add_(noise.to(device=param.device, dtype=param.dtype))


def build_model(cls: type, init_args: list, seed: int, randomize: bool, device: str,
                dtype: str | None) -> torch.nn.Module:
    """Seed, construct, perturb, move: the same sequence for Model and ModelNew so their weights match."""
    torch.manual_seed(seed)
    model = cls(*init_args)
    if randomize:
        randomize_parameters(model, seed)
    model = model.to(device)
    if dtype:
        model = model.to(torch_dtype(dtype))
    return model.eval()


def load_task_module(source: str) -> types.ModuleType:
    """The task's module (``Model``, ``get_inputs``, ...) from its trusted source; never candidate code."""
    module = types.ModuleType("reference_task")
    exec(compile(source, "<task>", "exec"), module.__dict__)  # noqa: S102 - the trusted task
    return module


def make_inputs(module: Any, spec: TrialSpec) -> tuple[list, list]:
    """(init_args, inputs) from the task module for this trial, on the CPU."""
    torch.manual_seed(spec.seed)
    init_args = list(module.get_init_inputs())
    torch.manual_seed(spec.seed + 1)
    inputs = []
    for x in module.get_inputs():
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            x = x * spec.scale if spec.scale != 1.0 else x
            if spec.dtype:
                x = x.to(torch_dtype(spec.dtype))
        inputs.append(x)
    return init_args, inputs


def to_device(values: list, device: str) -> list:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def as_tuple(output: Any) -> tuple:
    return tuple(output) if isinstance(output, (tuple, list)) else (output,)


def save_atomic(obj: Any, path: str) -> None:
    """torch.save to a temporary name, then rename: readers never see a half-written file."""
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
