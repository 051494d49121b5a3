"""Fast generation without vLLM: transformers' static KV cache and compiled decode step inside TRL's generate.

    rl.generation: fast          # the default; eager = TRL's own settings (dynamic cache, no compile)
    rl.generation_compile: {}    # transformers CompileConfig options; default mode reduce-overhead (CUDA graphs)

What TRL 1.16 and transformers (5.17 on the GPU host, 5.24 here) already do, and what is added here:
- One batched ``generate`` per step for all completions of a rank, with the KV cache: TRL's transformers path
  (``GRPOTrainer._generate_single_turn``); it turns gradient checkpointing off around ``generate``
  (``unwrap_model_for_generation``) and back on for the backward pass. ``use_cache=True`` is set here explicitly.
- A static cache and a compiled decode step: transformers compiles the decode step by itself when the cache is
  static, the device is CUDA and ``GenerationConfig.disable_compile`` is false, but TRL builds its generation
  config with ``disable_compile=True`` (and ``generation_kwargs`` cannot undo it: the key would clash). So after
  the trainer is built its ``generation_config`` gets ``cache_implementation="static"``, ``disable_compile=False``
  and a ``CompileConfig``.
- Shapes that never change: the static cache is ``max_cache_len`` long, set once to the longest prompt of the
  training set (rounded up to 64 tokens) plus ``rl.max_completion_length``, so every step's cache, whatever its
  prompts, has one shape and the decode step compiles once (a longer prompt would grow it, once: transformers
  keeps the largest length it has seen). The batch is the rank's generation batch (or one chunk of it,
  ``rl.generation_chunks``), the same every step.
- LoRA in place: PEFT's unmerged adapters are parameters the compiled graph reads as inputs (torch's inlined
  ``nn.Module`` parameters); the optimizer updates them in place, so no step recompiles
  (``tests/train/test_fast_generation.py`` counts dynamo's compiles over steps that train).
- One cache for the run: transformers allocates a new static cache in every ``generate`` (its
  ``_prepare_static_cache``, the same in 5.17 and 5.24), which costs the allocation (GBs at 64 x 1k tokens for a
  1.5B model) and gives the CUDA graphs new addresses to re-record. ``reuse_static_cache`` keeps one cache per
  (batch, length) and hands it back reset (``Cache.reset``, in place), so the addresses never change.
- One set of input-grad hooks: TRL turns gradient checkpointing off and on around every ``generate``, and each
  time transformers' ``enable_input_require_grads`` adds a forward hook on the input embeddings, which its
  ``disable`` removes only for transformers' own PEFT integration, not a ``PeftModel`` (transformers 5.17-5.24):
  with a hook more every call, the compiled forward's guard on the hook count failed at each generation,
  recompiled, and after torch's recompile limit (8) ran eagerly. ``single_input_grad_hooks`` makes the call
  replace the hooks it added before (``tests/train/test_fast_generation.py`` trains with gradient checkpointing on).
- ``generate`` as inference (``inference_generate``): the input-grad hook calls ``output.requires_grad_(True)``,
  which torch 2.11's dynamo does not trace (on an H200, 5 graph breaks in the compiled decode step:
  ``benchmarks/results/rl_step_1gpu_966eb6c.json``; torch 2.13 traces it here), and TRL generates with the model
  in training mode, so LoRA's dropout drew a mask for every adapted projection at every decode step (7 a layer:
  196 for a 28-layer model; in a profile of the CPU rehearsal's generate call, a quarter of its self CPU time). Nothing
  is differentiated through generation, and a policy served for inference (vLLM's, TRL's own continuous batching)
  samples without dropout; so the call runs with the hooks off and every module in eval mode, and both are put
  back after it. The training forward passes keep their dropout. The eager path is TRL's own and keeps both.
- Grouped-query attention in the decode step without copies of the cache (``packed_decode_attention``):
  transformers' SDPA attention repeats each key/value head for its query heads (``repeat_kv``) whenever there is a
  mask, and a static cache always has one (its unused tail); transformers packs one query token's heads onto their
  key/value head instead (``pack_gqa``), but not under torch.compile. So in the compiled decode step the whole
  cache was copied twice a layer at every token: on an H200 with a 1.5B model (12 query heads on 2 key/value heads,
  64 rows, a 1,600-token cache) those copies were 37% of the step's GPU time and SDPA over the repeated heads 31%
  (``benchmarks/results/rl_step_1gpu_c1_684e41c.json``, its profile). The fast path's attention is transformers' SDPA
  (registered as ``tritonrl_sdpa``, with its masks) except for a step of one query token: there a key/value head's
  queries go to SDPA as that many rows of one head, under any mask shared by the heads, and the output is laid
  back out; the same arithmetic (``tests/train/test_fast_generation.py`` compares the logits). Prompts and training
  forward passes run transformers' own code.
- The adapter merged for generation (``rl.generation_merge_lora``, on by default since its H200 run: 1.7x the
  tokens a second, docs/training.md; ``merged_lora_generate``): no adapter matmuls in the decode step, the base
  weights' exact values back after each ``generate`` from a copy made once (kept unmerged, and said, where that
  copy would take over ``MERGE_COPY_SHARE`` of the GPU's memory).
- EOS: ``generate`` stops when every sequence of the batch has finished; finished rows keep their slot (and their
  compute) until then, as static batches must; TRL masks what follows each EOS.

Where the fast path cannot run (no CUDA device, ``rl.use_cpu``, ``rl.use_vllm``, no Triton for inductor), or has
not been tried (parameters sharded by FSDP or ZeRO-3, gathered anew for every ``generate``), the run generates
eagerly and says so once (``fallback_reason``). ``install_generation(..., compile_anywhere=True)`` (tests
and the benchmark's CPU rehearsal) compiles on any device, with the backend ``rl.generation_compile`` names.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from tritonrl.config import TrainingConfig

PROMPT_BUCKET_TOKENS = 64  # the longest prompt is rounded up to this: the cache's length
DEFAULT_COMPILE = {"fullgraph": False, "mode": "reduce-overhead"}  # transformers' own defaults, made explicit
_SAID: set[str] = set()  # fallbacks already announced in this process


@dataclass
class GenerationPlan:
    """How a trainer generates: ``mode`` fast or eager, and why eager when fast was asked (``fallback``)."""

    mode: str
    fallback: str | None = None
    max_cache_len: int | None = None
    compile: dict[str, Any] = field(default_factory=dict)


def fallback_reason(config: TrainingConfig, device_type: str) -> str | None:
    """Why ``rl.generation: fast`` cannot run here (None: it can)."""
    rl = config.rl
    if rl.use_vllm:
        return "rl.use_vllm=true: vLLM generates"
    if rl.use_cpu or device_type != "cuda":
        return f"no CUDA device (training on {'cpu' if rl.use_cpu else device_type})"
    from tritonrl.common.ranks import sharded_launch

    if (sharded := sharded_launch()) is not None:  # parameters gathered anew for every generate: not measured
        return f"parameters sharded across ranks ({sharded}); the compiled path is for DDP / one GPU"
    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    if (config.rl.generation_compile.get("backend") or "inductor") == "inductor":
        from torch.utils._triton import has_triton

        if not has_triton():
            return "Triton is missing (torch.compile's inductor backend needs it on a GPU)"
    return None


def mixed_precision_reason(trainer) -> str | None:
    """Why a static cache cannot hold ``trainer``'s keys and values (None: it can). With float32 embeddings under
    bf16/fp16 autocast, the keys leave the rotary embedding in float32 and the values leave their projection in half
    precision; transformers 5.17's static cache takes both dtypes from the keys, and its ``index_copy_`` of the
    values fails (seen on the H200 host in study two's calibration; 5.24 allocates each in its own dtype)."""
    args = getattr(trainer, "args", None)
    half = "bf16" if getattr(args, "bf16", False) else "fp16" if getattr(args, "fp16", False) else None
    if half is None:
        return None
    import torch

    embeddings = trainer.model.get_input_embeddings()  # the rotary embedding's cos/sin take the hidden states' dtype
    if embeddings is not None and embeddings.weight.dtype == torch.float32:
        return f"float32 weights under {half} autocast (keys float32, values {half}: one static cache cannot hold both)"
    return None


def say_once(message: str) -> None:
    if message not in _SAID:
        _SAID.add(message)
        print(f"tritonrl: {message}", file=sys.stderr, flush=True)


LONGEST_CANDIDATES = 256  # prompts tokenized to find the longest: the longest by characters


def _chars(prompt) -> int:
    if isinstance(prompt, str):
        return len(prompt)
    return sum(len(str(m.get("content", ""))) for m in prompt)


def longest_prompt_tokens(tokenizer, prompts: list) -> int:
    """Tokens of the longest prompt as TRL tokenizes it (chat template with the generation prompt), among the
    ``LONGEST_CANDIDATES`` longest by characters (a large dataset is not tokenized whole at start; a longer prompt
    that slips through grows the cache once, and that step recompiles)."""
    longest = 0
    for prompt in sorted(prompts, key=_chars, reverse=True)[:LONGEST_CANDIDATES]:
        if isinstance(prompt, str):
            ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        else:
            ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
            ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
        longest = max(longest, len(ids))
    return longest


def cache_length(longest_prompt: int, max_completion_length: int) -> int:
    bucket = -(-max(1, longest_prompt) // PROMPT_BUCKET_TOKENS) * PROMPT_BUCKET_TOKENS
    return bucket + max_completion_length


def plan_generation(config: TrainingConfig, tokenizer, prompts: list, device_type: str,
                    compile_anywhere: bool = False) -> GenerationPlan:
    """What ``install_generation`` sets; no side effects but the one-time message of a fallback."""
    rl = config.rl
    if rl.generation == "eager" or rl.use_vllm:
        return GenerationPlan("eager")
    reason = None if compile_anywhere and not rl.use_vllm else fallback_reason(config, device_type)
    if reason is not None:
        say_once(f"rl.generation=fast falls back to eager generation: {reason}")
        return GenerationPlan("eager", fallback=reason)
    if rl.turns > 1 and rl.turn_max_prompt_tokens:
        longest = rl.turn_max_prompt_tokens  # later turns' prompts grow up to the budget
    else:
        longest = longest_prompt_tokens(tokenizer, prompts)
    return GenerationPlan("fast", max_cache_len=cache_length(longest, rl.max_completion_length),
                          compile={**DEFAULT_COMPILE, **rl.generation_compile})


def install_generation(trainer, config: TrainingConfig, prompts: list, compile_anywhere: bool = False
                       ) -> GenerationPlan:
    """Set ``trainer``'s transformers generation (TRL's ``generation_config``) by ``rl.generation``; vLLM runs
    are left alone. ``prompts``: the training set's, to size the static cache."""
    if config.rl.use_vllm or getattr(trainer, "generation_config", None) is None:
        return GenerationPlan("eager")
    device_type = trainer.accelerator.device.type
    plan = plan_generation(config, trainer.processing_class, prompts, device_type, compile_anywhere)
    if plan.mode == "fast" and (reason := mixed_precision_reason(trainer)) is not None:
        say_once(f"rl.generation=fast falls back to eager generation: {reason}")
        plan = GenerationPlan("eager", fallback=reason)
    settings: dict[str, Any] = {"use_cache": True}  # the KV cache, always (TRL's default too; said, not assumed)
    if plan.mode == "fast":
        from transformers.generation import CompileConfig

        compile_config = CompileConfig(**decode_compile_options(plan.compile))
        if compile_anywhere:
            compile_config._compile_all_devices = True  # transformers' own switch for devices other than CUDA
        settings.update(cache_implementation="static", max_cache_len=plan.max_cache_len, disable_compile=False,
                        compile_config=compile_config)
    for name, value in settings.items():
        setattr(trainer.generation_config, name, value)
    single_input_grad_hooks(trainer.model)
    if plan.mode == "fast":
        reuse_static_cache(trainer.model)
        inference_generate(trainer.model)
        packed_decode_attention(trainer.model)
        if config.rl.generation_merge_lora and (reason := merged_lora_generate(trainer.model)) is not None \
                and is_peft_model(trainer.model):  # a full fine-tune has no adapter to merge: nothing to say
            say_once(f"rl.generation_merge_lora: the adapter stays unmerged in generation: {reason}")
    if isinstance(getattr(trainer, "generation_kwargs", None), dict):  # TRL's copy for older transformers
        trainer.generation_kwargs.update({k: v for k, v in settings.items() if k != "compile_config"})
    trainer.generation_plan = plan
    return plan


def decode_compile_options(options: dict[str, Any]) -> dict[str, Any]:
    """``CompileConfig`` options for the decode step: ``options`` with dynamo's guards on ``nn.Module`` attributes
    left out (``torch.compiler.skip_guard_on_all_nn_modules_unsafe``), where this torch has that filter. Checking
    those guards (every module's attributes, hundreds of LoRA modules) cost 3.7 ms a decode step on an H200, a
    sixth of the step (``benchmarks/results/rl_step_1gpu_c1_684e41c.json``, "TorchDynamo Cache Lookup"), and no
    guard can fail here: the step always runs in eval mode (``inference_generate``), with the same modules and hooks, and the
    parameters the optimizer updates in place are the graph's inputs, read at every call (tested). torch.compile
    takes a ``mode`` or ``options``, not both, so the mode is given as its options (``list_mode_options``)."""
    import torch

    skip = getattr(torch.compiler, "skip_guard_on_all_nn_modules_unsafe", None)
    if skip is None or "options" in options:
        return dict(options)
    settings = dict(options)
    mode = settings.pop("mode", None)
    inductor_options: dict[str, Any] = {}
    if (settings.get("backend") or "inductor") == "inductor" and mode not in (None, "default"):
        from torch._inductor import list_mode_options

        inductor_options = dict(list_mode_options(mode))
    elif mode not in (None, "default"):
        return dict(options)  # another backend's mode: kept as it is, with the guards
    return {**settings, "mode": None, "options": {**inductor_options, "guard_filter_fn": skip}}


def base_model(model):
    """The transformers model under a PEFT wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def single_input_grad_hooks(model) -> None:
    """Make ``enable_input_require_grads`` of ``model``'s transformers model replace the hooks it added before
    instead of adding more (see the module's docstring); its own ``disable_input_require_grads`` removes them."""
    base = base_model(model)
    if getattr(base, "_tritonrl_single_hooks", False) or not hasattr(base, "disable_input_require_grads"):
        return
    enable = base.enable_input_require_grads

    def enable_once() -> None:
        base.disable_input_require_grads()
        base._require_grads_hooks = []
        enable()

    base.enable_input_require_grads = enable_once
    base._tritonrl_single_hooks = True


def inference_generate(model) -> None:
    """``generate`` of ``model``'s transformers model runs as inference: no input-grad hooks and every module in
    eval mode (no dropout), both restored after the call (see the module's docstring)."""
    base = base_model(model)
    if getattr(base, "_tritonrl_inference_generate", False):
        return
    generate = base.generate

    def generate_for_inference(*args, **kwargs):
        hooked = bool(getattr(base, "_require_grads_hooks", None))
        modes = [(module, module.training) for module in base.modules()]
        if hooked:
            base.disable_input_require_grads()
        base.eval()
        try:
            return generate(*args, **kwargs)
        finally:
            for module, training in modes:
                module.training = training
            if hooked:
                base.enable_input_require_grads()

    base.generate = generate_for_inference
    base._tritonrl_inference_generate = True


# The most of a GPU's memory the merge's copy of the adapted weights may take: a 7B model's (~13 GB) fits an 80 GB
# GPU beside training, not a 24 GB one, where the adapter stays unmerged and that is said.
MERGE_COPY_SHARE = 0.2


def is_peft_model(model) -> bool:
    tuner = getattr(model, "base_model", None)
    return hasattr(tuner, "merge_adapter") and hasattr(tuner, "unmerge_adapter")


def device_memory(device) -> int | None:
    """A CUDA device's total memory in bytes; None for other devices."""
    import torch

    return torch.cuda.get_device_properties(device).total_memory if device.type == "cuda" else None


def merged_lora_generate(model) -> str | None:
    """``generate`` of ``model`` (a PEFT LoRA model) runs with the adapter merged into the base weights, which get
    their exact values back after the call; None, or why not.

    In the compiled decode step of the 1.5B model on an H200 the adapter's small float32 matmuls (two a projection,
    seven projections a layer) and their casts were ~2.4 of the 5.6 ms a token. Merged, a projection is one bf16
    matmul, as vLLM serves a LoRA. PEFT's ``merge_adapter`` adds the adapter's delta to each base weight in place
    and ``unmerge_adapter`` takes it off again, but in bf16 ``W + d - d`` is not ``W``, and the error would grow
    over a run's thousands of generations: so a copy of the adapted base weights is taken at the first call (frozen
    under LoRA: they never change) and copied back after each. In place: the addresses the compiled step's CUDA
    graphs read stay the same, and the graph compiled while merged has no adapter branch (its guards on module
    attributes are skipped, ``decode_compile_options``), while the training forward, eager, sees the adapter
    unmerged. The copy costs the adapted weights' size in GPU memory (1.5B: ~2.6 GB; 7B: ~13 GB)."""
    import torch

    tuner = getattr(model, "base_model", None)
    if not is_peft_model(model):
        return "the model is not a PEFT model"
    from peft.tuners.tuners_utils import BaseTunerLayer

    weights = [m.get_base_layer().weight for m in tuner.modules() if isinstance(m, BaseTunerLayer)]
    if not weights:
        return "no adapted layer"
    if any(w.requires_grad for w in weights):
        return "the adapted base weights are trained (a copy of them would undo that)"
    if any(w.dtype not in (torch.float32, torch.bfloat16, torch.float16) for w in weights):
        return "quantized base weights (a merge cannot be undone exactly there)"
    copy_bytes = sum(w.numel() * w.element_size() for w in weights)
    total = device_memory(weights[0].device)
    if total is not None and copy_bytes > MERGE_COPY_SHARE * total:
        return (f"the copy of the adapted base weights it needs ({copy_bytes / 2**30:.1f} GiB) is over "
                f"{MERGE_COPY_SHARE:.0%} of the GPU's {total / 2**30:.0f} GiB")
    base = base_model(model)
    if getattr(base, "_tritonrl_merged_generate", False):
        return None
    generate = base.generate
    pristine: list = []

    def generate_merged(*args, **kwargs):
        with torch.no_grad():
            if not pristine:
                pristine.extend(w.detach().clone() for w in weights)
            tuner.merge_adapter()
        try:
            return generate(*args, **kwargs)
        finally:
            with torch.no_grad():
                tuner.unmerge_adapter()  # PEFT's own bookkeeping of what is merged
                for weight, exact in zip(weights, pristine):
                    weight.copy_(exact)

    base.generate = generate_merged
    base._tritonrl_merged_generate = True
    return None


def reuse_static_cache(model) -> None:
    """``model``'s transformers model gives ``generate`` the static cache of its last call of the same batch size
    and length, reset in place, instead of a new one (see the module's docstring)."""
    base = base_model(model)
    prepare = getattr(base, "_prepare_static_cache", None)
    if prepare is None or getattr(base, "_tritonrl_cache_reused", False):
        if prepare is None:
            say_once("this transformers has no _prepare_static_cache: each generate allocates its static cache")
        return
    caches: dict[tuple, object] = {}

    def prepare_once(cache_implementation, batch_size, max_cache_len, *args, **kwargs):
        key = (cache_implementation, batch_size, max(max_cache_len, getattr(base, "_previous_max_cache_length", -1)))
        cache = caches.get(key)
        if cache is None or base.config.is_encoder_decoder:
            cache = caches[key] = prepare(cache_implementation, batch_size, max_cache_len, *args, **kwargs)
        else:
            cache.reset()
        return cache

    base._prepare_static_cache = prepare_once
    base._tritonrl_cache_reused = True


ATTENTION = "tritonrl_sdpa"  # transformers' SDPA attention, a decode step's grouped heads packed (module docstring)


def decode_attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None,
                     **kwargs):
    """transformers' ``sdpa_attention_forward``, except for one query token of grouped-query attention with a mask
    shared by the heads (or none): the ``groups`` query heads of each key/value head go to SDPA as ``groups`` rows of
    that head, so no key or value is repeated. Returns ``(output, None)`` laid out as transformers' is:
    (batch, 1, heads, head_dim)."""
    import torch.nn.functional as F
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = getattr(module, "num_key_value_groups", 1)
    shared_mask = attention_mask is None or attention_mask.shape[1] == 1
    if query.shape[2] != 1 or groups == 1 or not shared_mask or kwargs.get("position_bias") is not None \
            or kwargs.get("softcap") is not None or kwargs.get("output_attentions"):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    batch, heads, _, dim = query.shape
    packed = query.reshape(batch, heads // groups, groups, dim)  # head h -> (h // groups, h % groups): repeat_kv's
    output = F.scaled_dot_product_attention(packed, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                            scale=scaling)
    return output.reshape(batch, heads, 1, value.shape[-1]).transpose(1, 2).contiguous(), None


def packed_decode_attention(model) -> bool:
    """Give ``model``'s transformers model ``decode_attention`` (as ``ATTENTION``, with SDPA's masks) where it runs
    transformers' SDPA attention; other implementations (eager, flash attention) are left alone. True if set."""
    base = base_model(model)
    config = getattr(base, "config", None)
    if getattr(config, "_attn_implementation", None) not in ("sdpa", ATTENTION):
        return False
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

        AttentionInterface.register(ATTENTION, decode_attention)
        AttentionMaskInterface.register(ATTENTION, ALL_MASK_ATTENTION_FUNCTIONS["sdpa"])
        base.set_attn_implementation(ATTENTION)
    except (ImportError, AttributeError, KeyError, ValueError) as error:  # a transformers without these interfaces
        say_once(f"rl.generation=fast keeps transformers' SDPA attention (keys repeated in the decode step): {error}")
        return False
    return True


def compiled_graphs() -> int:
    """Graphs torch.compile has built in this process so far (dynamo's count): the same number before and after a
    step means that step compiled nothing (no recompile)."""
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])
