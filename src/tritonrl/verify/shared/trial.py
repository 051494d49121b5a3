"""One correctness trial, and how both sides build the same model and inputs for it.

A trial is (task variant, seed, value scale, dtype). The reference process (``tritonrl.verify.judge.references``)
builds ``Model`` and the inputs; the candidate child (``tritonrl.verify.child.harness``) builds the same inputs itself,
before any candidate code is imported, and ``ModelNew`` with the same seed and parameter perturbation. Nothing here
imports candidate code; both processes import this module before anything untrusted runs.
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

PERTURB_SCALE = 0.1  # relative size of the noise added to every parameter (see randomize_parameters)


@dataclass(frozen=True)
class TrialSpec:
    """name: "tiny", "full0", "time0", ...; stage: "tiny", "full" or "timing"; source: the task (variant) text.

    ``seed`` seeds the models (and the inputs, unless ``input_seed`` is given: timing sets share the timed
    trial's weights but not its input values). ``scale`` multiplies every float input; ``spread`` > 1 then
    multiplies each element by its own factor in [1/spread, spread] (log-uniform): values of mixed scale, the
    largest far beyond ``randn``'s; ``shift`` then adds ``shift`` times the input's RMS to a third of its rows
    (``shifted_rows``; up or down by its sign): rows far from zero against their spread, all of one sign
    (``make_inputs``).
    """

    name: str
    stage: str
    task_key: str
    source: str
    seed: int
    scale: float = 1.0
    dtype: str | None = None
    input_seed: int | None = None
    spread: float = 1.0
    shift: float = 0.0

    def describe(self) -> str:
        parts = [f"trial {self.name}", f"seed {self.seed}"]
        if self.scale != 1.0:
            parts.append(f"inputs x{self.scale:g}")
        if self.spread != 1.0:
            parts.append(f"each element x{1 / self.spread:g} to x{self.spread:g}")
        if self.shift:
            parts.append(f"a third of the rows {self.shift:+g} x their RMS")
        if self.dtype:
            parts.append(self.dtype)
        return ", ".join(parts)

    def cache_key(self, device: str, randomize: bool) -> str:
        """Identity of the reference result: (task.key, variant, seed, scale, dtype, device, torch version)."""
        text = "|".join(map(str, (self.task_key, self.seed, self.scale, self.dtype, device, randomize,
                                   self.input_seed, self.spread, self.shift, torch.__version__,
                                   "v3")))  # v3: payload format
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def exact_fp32() -> None:
    """fp32 means fp32 on both sides: no TF32 in cuBLAS matmuls or cuDNN convolutions (cuDNN's default is on).

    With TF32 a reference convolution differs from an exact one by more than the 1e-4 tolerance, so honest fp32
    kernels would be judged wrong. Set in both processes before anything untrusted runs (assigning
    ``torch.backends`` afterwards is tampering for the static checks).
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def torch_dtype(name: str | None) -> torch.dtype | None:
    return None if name is None else getattr(torch, name)


def randomize_parameters(model: torch.nn.Module, seed: int) -> None:
    """Perturb every parameter with noise that depends on its values, not on where or how it is stored.

    Why: a candidate that skips LayerNorm's weight and bias is right while they are still 1 and 0; after this
    they are not. Both models must get bit-identical weights, also when ModelNew registers the same parameters
    in another order or stores one in another layout (a linear layer's weight kept pre-transposed, ``(in,
    out)``). So a parameter with varied values (any random initialisation) gets, element by element, noise that
    is a hash of that element's bits and the seed: the same values get the same noise in any layout. A
    parameter with few distinct values (LayerNorm's ones and zeros, a constant bias) would stay constant under
    any such rule, so it gets positional noise seeded by (seed, shape, dtype, a fingerprint of its values, its
    rank among equals), as a vector has only one layout. Drawn on the parameter's own device.
    """
    seen: dict[tuple, int] = {}
    with torch.no_grad():
        for param in model.parameters():
            if param.numel() == 0:
                continue
            if param.is_floating_point():  # one NaN bit pattern: a payload is no place for data
                param.masked_fill_(param.isnan(), float("nan"))
            if _varied(param):
                noise = value_keyed_noise(param.detach(), seed)
            else:
                ident = (tuple(param.shape), str(param.dtype), _fingerprint(param))
                rank = seen[ident] = seen.get(ident, -1) + 1
                noise_seed = int(hashlib.sha256(repr((seed, ident, rank)).encode()).hexdigest()[:15], 16)
                gen = torch.Generator(device=param.device).manual_seed(noise_seed)
                noise = torch.randn(param.shape, generator=gen, dtype=torch.float32, device=param.device)
            if param.dtype == torch.bool:  # bits have no size: a tenth of them flip (a table of bits moves too)
                param.logical_xor_(noise.abs() > FLIP_AT)
                continue
            step = noise * _scales(param)
            if not param.is_floating_point():  # integers move by whole units: at least one, either way
                step = torch.where(step < 0, step.floor(), step.ceil())
            param.add_(step.to(dtype=param.dtype))


FLIP_AT = 1.645  # |noise| past this flips a bool parameter's element: a tenth of a normal draw's


def _scales(param: torch.Tensor) -> torch.Tensor:
    """Each element's noise scale: ``PERTURB_SCALE`` of its own magnitude or the parameter's mean magnitude,
    whichever is larger (1 where both are 0). The mean alone let a table hide in a parameter padded with zeros,
    whose mean is tiny (the twenty-fourth red team); by the element, a table's every value moves. A function of
    the element's value and of the whole's mean: equal in any layout, as the noise is."""
    magnitude = param.detach().abs().float()
    finite = magnitude[magnitude.isfinite()]
    mean = float(finite.mean()) if finite.numel() else 0.0
    scale = magnitude.nan_to_num(0.0, posinf=0.0).clamp(min=mean)
    return PERTURB_SCALE * scale.masked_fill(scale == 0, 1.0)


_M31 = 0x7FFFFFFF
_BITS_AS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def value_keyed_noise(values: torch.Tensor, seed: int) -> torch.Tensor:
    """Noise of unit variance (uniform), one draw per element, a function of the element's bits and ``seed``
    only (float32, same shape). Integer arithmetic kept under 2**62, so it is exact on every device."""
    flat = values.contiguous()
    bits = flat.view(_BITS_AS[flat.element_size()]).to(torch.int64)
    h = (bits & _M31) ^ ((bits >> 31) & _M31) ^ ((bits >> 62) & 3)
    h = h ^ (int(hashlib.sha256(repr(("perturb", seed)).encode()).hexdigest()[:7], 16) & _M31)
    for mult in (0x5BD1E995, 0x1B873593, 0x2C1B3C6D):
        h = ((h ^ (h >> 15)) * mult) & _M31
    uniform = h.to(torch.float64) / float(_M31 + 1)
    return ((uniform * 2.0 - 1.0) * 3.0 ** 0.5).to(torch.float32)


def _varied(param: torch.Tensor) -> bool:
    """Most values distinct (a random initialisation), not a few repeated ones (ones, zeros, a constant)."""
    n = param.numel()
    return n > 1 and torch.unique(param.detach().reshape(-1)).numel() > n // 2


def _fingerprint(param: torch.Tensor) -> str:
    """A short summary of a parameter's values: equal for equal tensors on one device."""
    flat = param.detach().reshape(-1).double()
    stats = (flat.sum(), flat.square().sum(), flat[0], flat[-1])
    return ",".join(f"{float(v):.6g}" for v in stats)


def build_model(cls: type, init_args: list, seed: int, randomize: bool, device: str,
                dtype: str | None, check: Callable[[torch.nn.Module], None] | None = None) -> torch.nn.Module:
    """Seed, construct on the device, perturb, cast: the same sequence for Model and ModelNew.

    On a GPU the model is built there (``torch.device`` as the default device), so a 67M-parameter layer is
    initialised and perturbed by the GPU, never by the CPU; CPU and GPU results differ, which is fine because
    the reference and the candidate of a trial always run on the same device.
    """
    torch.manual_seed(seed)
    with torch.device(device):
        model = cls(*init_args)
    if check is not None:  # before any method of the model's runs here (the candidate's child: ``overrides.py``)
        check(model)
    model = model.to(device)
    if randomize:
        randomize_parameters(model, seed)
    if dtype:
        model = model.to(torch_dtype(dtype))
    return model.eval()


def load_task_module(source: str) -> types.ModuleType:
    """The task's module (``Model``, ``get_inputs``, ...) from its trusted source; never candidate code."""
    module = types.ModuleType("reference_task")
    exec(compile(source, "<task>", "exec"), module.__dict__)  # noqa: S102 - the trusted task
    return module


def make_inputs(module: Any, spec: TrialSpec, device: str = "cpu", inputs: bool = True) -> tuple[list, list]:
    """(init_args, inputs) from the task module for this trial, made on ``device`` (``inputs=False``: the
    constructor's arguments only).

    Only the judge calls this (``tritonrl.verify.judge.references``): the candidate is handed the values.
    """
    torch.manual_seed(spec.seed)
    init_args = list(module.get_init_inputs())
    if not inputs:
        return init_args, []
    torch.manual_seed(spec.seed + 1 if spec.input_seed is None else spec.input_seed)
    with torch.device(device):
        raw = list(module.get_inputs())
    made = []
    for x in raw:
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            if x.is_floating_point():
                x = x * spec.scale if spec.scale != 1.0 else x
                if spec.spread != 1.0:  # drawn after every input is made: the values of get_inputs stay as seeded
                    u = torch.rand(x.shape, device=x.device, dtype=torch.float64) * 2 - 1
                    x = x * (spec.spread ** u).to(x.dtype)
                if spec.shift and x.numel():  # a third of the rows far from zero against their spread
                    offset = spec.shift * x.double().square().mean().sqrt()
                    x = x + (offset * shifted_rows(x)).to(x.dtype)
                if spec.dtype:
                    x = x.to(torch_dtype(spec.dtype))
        made.append(x)
    return init_args, made


def shifted_rows(x: torch.Tensor) -> torch.Tensor:
    """1 for the elements of ``x`` a shifted trial moves, 0 for the rest: the first third of the rows along its first
    dimension of three or more (the last aside), else the first third of its values. Those rows are far from zero
    on one side (a row's mean dwarfs its spread: a one-pass variance cancels; its blocks are of one sign), the rest
    keep ``randn``'s values. Why not every row: a ReLU would then be the identity on all of it, so an honest kernel
    rewriting a clone in place changes no byte, and one computing from torch's float64 copy writes that copy's values
    (a copy, ``copies.COPY_SHARE``: 75% of the values); here two thirds are. Why not rows of both signs: a sum across
    them (a matrix-vector product) cancels, terms of +-1e4 adding up to ~1e2, and an honest fp32 kernel lands 5e-4
    off the reference (the bundled ``l1_matvec`` was rejected)."""
    lead = next((d for d in range(x.dim() - 1) if x.shape[d] >= 3), None)
    if lead is None:
        index = torch.arange(x.numel(), device=x.device)
        return (index < max(1, x.numel() // 3)).double().view(x.shape)
    shape = [1] * x.dim()
    shape[lead] = x.shape[lead]
    index = torch.arange(x.shape[lead], device=x.device)
    return (index < max(1, x.shape[lead] // 3)).double().view(shape)


def to_device(values: list, device: str) -> list:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def as_tuple(output: Any) -> tuple:
    return tuple(output) if isinstance(output, (tuple, list)) else (output,)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def state_digests(model: torch.nn.Module) -> list[str]:
    """A digest (dtype, shape, bytes) of each buffer of ``model``: the judge sends the reference model's, and the
    child vouches for a candidate's buffer equal to one of them (the task's own state, however it was computed)."""
    return sorted({digest(b) for b in model.buffers() if b.numel()})


def digest(t: torch.Tensor) -> str:
    data = t.detach().contiguous().reshape(-1).view(torch.uint8).cpu()
    head = f"{str(t.dtype)}|{tuple(t.shape)}|".encode()
    return hashlib.sha256(head + bytes(data.numpy())).hexdigest()
