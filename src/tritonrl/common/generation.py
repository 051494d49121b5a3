"""Generation: k completions for each chat prompt, from transformers (batched) or vLLM, behind one interface.

    generator = load_generator("runs/x:sft", Sampling.from_eval(EvalConfig()))   # evaluation: load by spec
    generator = HFGenerator(model, tokenizer, Sampling(temperature=1.0, max_new_tokens=512, seed=None))
    texts = generator.generate([build_messages(task, load_template(path))], k=4)   # [[text] * 4]

Evaluation (``tritonrl.evaluation.evaluate``, ``tritonrl.evaluation.refinement``), Best-of-N (``tritonrl.train.best_of_n``) and so the
pipeline generate here; prompts are built by ``tritonrl.common.prompts`` (``build_messages`` + ``load_template``).

A model spec is a hub id, ``tiny:DIR``, a local directory (a full model, or a PEFT adapter whose
``adapter_config.json`` names its base), or a run directory: its ``manifest.json`` names the model each stage
wrote (``RUN_DIR`` takes the most recently finished; ``RUN_DIR:sft`` or ``RUN_DIR:rl`` picks one). Paths come
from the manifest, never from a guess.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tritonrl.common.stages import RL_STAGES
from tritonrl.errors import UserError

if TYPE_CHECKING:
    from tritonrl.config import EvalConfig

Messages = list[dict[str, str]]


class Generator(Protocol):
    def generate(self, prompts: Sequence[Messages], k: int) -> list[list[str]]:
        """k completions for each chat prompt."""


@dataclass(frozen=True)
class Sampling:
    """How to sample: ``temperature`` 0 is greedy; ``top_p`` None and ``seed`` None leave the model's own
    generation config and the global RNG alone; ``batch_size`` prompts per ``generate`` call (transformers)."""

    temperature: float = 0.0
    max_new_tokens: int = 2048
    top_p: float | None = None
    seed: int | None = None
    batch_size: int = 1

    @classmethod
    def from_eval(cls, config: EvalConfig) -> Sampling:
        return cls(temperature=config.temperature, max_new_tokens=config.max_new_tokens, top_p=config.top_p,
                   seed=config.seed, batch_size=config.batch_size)


# ---------------------------------------------------------------- where a model comes from
@dataclass(frozen=True)
class ModelSource:
    """Where to load a model from: base weights, an optional PEFT adapter, the tokenizer."""

    base: str
    adapter: str | None = None
    tokenizer: str | None = None


def resolve_model(spec: str) -> ModelSource:
    """A hub id, ``tiny:DIR``, a model or adapter directory, or ``RUN_DIR[:stage]`` read through its manifest."""
    path = Path(spec).expanduser()
    if spec.startswith("tiny:"):
        return ModelSource(base=spec)  # the training stack's locally built tiny model
    if (path / "manifest.json").is_file():
        return _from_manifest(path, None)
    run_dir, sep, stage = spec.rpartition(":")
    if sep and (Path(run_dir) / "manifest.json").is_file():
        return _from_manifest(Path(run_dir), stage)
    if path.is_dir():
        return _from_directory(path)
    if sep or spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise UserError(f"model path not found: {spec}")
    return ModelSource(base=spec)  # a hub id


def _from_directory(path: Path, base: str | None = None, tokenizer: str | None = None) -> ModelSource:
    adapter_config = path / "adapter_config.json"
    if not adapter_config.is_file():
        return ModelSource(base=str(path), tokenizer=tokenizer)
    # The adapter records the base it was trained on; that record, not a guess, names the base.
    base = base or json.loads(adapter_config.read_text()).get("base_model_name_or_path")
    if not base:
        raise UserError(f"PEFT adapter {path} names no base model (base_model_name_or_path)")
    return ModelSource(base=base, adapter=str(path), tokenizer=tokenizer or str(path))


def _from_manifest(run_dir: Path, stage: str | None) -> ModelSource:
    """The model a stage recorded; without a stage, the most recently finished trained stage."""
    from tritonrl.common.manifest import RunManifest

    manifest = RunManifest(run_dir)
    stages = manifest.load()["stages"]
    trained = {name: entry for name, entry in stages.items()
               if entry.get("status") == "done" and "model" in entry.get("outputs", {})}
    if stage == "rl":
        trained = {n: e for n, e in trained.items() if n in RL_STAGES}
    elif stage:
        manifest.output(stage, "model")  # a one-line error if missing or unfinished
        trained = {stage: stages[stage]}
    if not trained:
        raise UserError(f"run {run_dir} has no finished stage with a model in {manifest.path}"
                        + (f" (asked for {stage!r})" if stage else ""))
    name = max(trained, key=lambda n: trained[n].get("finished") or "")
    outputs = trained[name]["outputs"]
    model = Path(outputs["model"])
    if not model.exists() and (run_dir / model).exists():
        model = run_dir / model
    if not model.exists():
        raise UserError(f"manifest {manifest.path} names model {model} for stage {name!r}, which is missing")
    return _from_directory(model, base=outputs.get("base_model"), tokenizer=outputs.get("tokenizer"))


# ---------------------------------------------------------------- backends
def load_generator(spec: str, config: EvalConfig) -> Generator:
    """The generation backend for a model spec: vLLM when asked for and installed, else transformers."""
    source = resolve_model(spec)
    backend = config.backend
    if backend in ("vllm", "auto"):
        try:
            import vllm  # noqa: F401
        except ImportError:
            if backend == "vllm":
                raise UserError("backend vllm asked for, but vllm is not installed") from None
            backend = "hf"
        else:
            backend = "vllm"
    if backend == "vllm":
        return VLLMGenerator(source, Sampling.from_eval(config))
    if backend != "hf":
        raise UserError(f"unknown generation backend {backend!r} (hf, vllm, auto)")
    return HFGenerator.load(source, Sampling.from_eval(config), config.device)


def prompts_per_call(model: str | Generator, config: EvalConfig) -> int:
    """How many prompts evaluation gives each ``generate`` call (its completions are saved after each):
    ``eval.batch_size`` (what transformers batches anyway), or what the generator asks for (``prompts_per_call``:
    vLLM schedules many prompts at once)."""
    if isinstance(model, str):
        import importlib.util

        vllm = config.backend == "vllm" or (config.backend == "auto" and importlib.util.find_spec("vllm") is not None)
        return VLLMGenerator.prompts_per_call if vllm else config.batch_size
    return getattr(model, "prompts_per_call", None) or config.batch_size


class HFGenerator:
    """transformers ``generate`` on a loaded model: the tokenizer's chat template, left padding (for this call
    only: the tokenizer may be a trainer's too), ``batch_size`` prompts per call, k sequences per prompt."""

    def __init__(self, model: Any, tokenizer: Any, sampling: Sampling):
        self.model, self.tokenizer, self.sampling = model, tokenizer, sampling

    @classmethod
    def load(cls, source: ModelSource, sampling: Sampling, device: str = "auto") -> HFGenerator:
        """Load ``source`` with the training stack's loader (same dtype handling, ``tiny:DIR`` models, merged
        adapters as bases) onto ``device`` (``auto``: CUDA when available)."""
        import torch

        from tritonrl.common.llm import load_model, load_tokenizer
        from tritonrl.config import ModelConfig

        device = device if device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        model, tokenizer = load_model(ModelConfig(name_or_path=source.base, dtype="auto"))
        if source.tokenizer:
            tokenizer = load_tokenizer(source.tokenizer)
        if source.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, source.adapter)
        return cls(model.to(device), tokenizer, sampling)

    def _prompt_text(self, messages: Messages) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, messages: Messages) -> int:
        """Prompt tokens as generation will see them (the refinement budget's measure)."""
        return len(self.tokenizer(self._prompt_text(messages), add_special_tokens=False)["input_ids"])

    def generate(self, prompts: Sequence[Messages], k: int) -> list[list[str]]:
        import torch

        s = self.sampling
        if s.seed is not None:  # per call, keyed by its prompts: calls differ, and a resumed call repeats itself
            import hashlib
            import json

            digest = hashlib.sha256(json.dumps([list(prompts), k], sort_keys=True, default=str).encode()).hexdigest()
            torch.manual_seed((s.seed + int(digest[:12], 16)) % 2**63)
        # greedy decoding gives one answer: transformers refuses num_return_sequences > 1 without sampling, so it
        # is decoded once and repeated k times (``tritonrl eval --k 2`` at the default temperature 0 crashed)
        n = k if s.temperature > 0 else 1
        kwargs: dict[str, Any] = {"max_new_tokens": s.max_new_tokens, "num_return_sequences": n,
                                  "do_sample": s.temperature > 0, "pad_token_id": self.tokenizer.pad_token_id}
        if s.temperature > 0:
            kwargs["temperature"] = s.temperature
            if s.top_p is not None:
                kwargs["top_p"] = s.top_p
        self.model.eval()
        side, self.tokenizer.padding_side = self.tokenizer.padding_side, "left"
        try:
            out: list[list[str]] = []
            for start in range(0, len(prompts), max(1, s.batch_size)):
                texts = [self._prompt_text(m) for m in prompts[start:start + s.batch_size]]
                batch = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
                batch = batch.to(self.model.device)
                with torch.no_grad():
                    tokens = self.model.generate(**batch, **kwargs)
                new = tokens[:, batch["input_ids"].shape[1]:]
                decoded = self.tokenizer.batch_decode(new, skip_special_tokens=True)
                out += [decoded[i * n:(i + 1) * n] * (k // n) for i in range(len(texts))]
            return out
        finally:
            self.tokenizer.padding_side = side


class VLLMGenerator:
    """vLLM's offline ``LLM.chat``; a PEFT adapter is served as a LoRA request on its base. With a seed
    (``Sampling.seed``) each request is seeded, so a prompt's completions do not depend on the prompts sent with it."""

    prompts_per_call = 64  # evaluation's calls (completions saved after each): enough to keep vLLM's batches full

    def __init__(self, source: ModelSource, sampling: Sampling):
        from vllm import LLM

        self.source, self.sampling = source, sampling
        self.llm = LLM(model=source.base, tokenizer=source.tokenizer or source.base, seed=sampling.seed,
                       enable_lora=source.adapter is not None)

    def generate(self, prompts: Sequence[Messages], k: int) -> list[list[str]]:
        from vllm import SamplingParams

        s = self.sampling
        params = SamplingParams(n=k, temperature=s.temperature, top_p=1.0 if s.top_p is None else s.top_p,
                                max_tokens=s.max_new_tokens, seed=s.seed)
        lora = None
        if self.source.adapter:
            from vllm.lora.request import LoRARequest

            lora = LoRARequest("adapter", 1, self.source.adapter)
        outputs = self.llm.chat(list(prompts), params, lora_request=lora)
        return [[c.text for c in o.outputs] for o in outputs]
