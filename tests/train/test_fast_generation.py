"""rl.generation: the fast path's settings, its clean fallback on a CPU, and no recompiles after the first step."""

from __future__ import annotations

import pytest

from tests.helpers.fake_verifier import FakeVerifier, faster_by_text
from tritonrl.train import fast_generation as fg
from tritonrl.train import rl


def test_fast_is_the_default_and_its_options_are_checked_at_load(make_config):
    from tritonrl.errors import ConfigError

    assert make_config().rl.generation == "fast" and make_config().rl.generation_compile == {}
    with pytest.raises(ConfigError, match="generation_compile has key.*fullgraf"):
        make_config("rl.generation_compile={fullgraf: true}")


def test_on_a_cpu_fast_falls_back_to_eager_and_says_so_once(make_config, capsys, monkeypatch):
    monkeypatch.setattr(fg, "_SAID", set())
    config = make_config()
    first = fg.plan_generation(config, None, [], "cpu")
    second = fg.plan_generation(config, None, [], "cpu")
    assert first.mode == second.mode == "eager" and "no CUDA device" in first.fallback
    err = capsys.readouterr().err
    assert err.count("rl.generation=fast falls back to eager generation") == 1
    assert fg.plan_generation(make_config("rl.generation=eager"), None, [], "cpu").fallback is None


def test_the_static_cache_is_sized_once_from_the_longest_prompt(make_config, tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    prompts = [[{"role": "user", "content": "x " * n}] for n in (3, 70)]
    longest = fg.longest_prompt_tokens(tokenizer, prompts)
    plan = fg.plan_generation(make_config(), tokenizer, prompts, "cuda", compile_anywhere=True)
    assert plan.mode == "fast" and plan.max_cache_len == fg.cache_length(longest, 8)
    assert plan.max_cache_len % 64 == 8 and plan.max_cache_len >= longest + 8
    assert plan.compile == {"fullgraph": False, "mode": "reduce-overhead"}


def test_vllm_runs_are_left_alone(make_config):
    config = make_config("rl.use_cpu=false", "rl.use_vllm=true")
    assert fg.plan_generation(config, None, [], "cuda").mode == "eager"


@pytest.fixture()
def captured_trainer(monkeypatch):
    """The trainer run_rl builds, compiled on any device (dynamo's eager backend: tracing without codegen)."""
    box = {"callbacks": []}

    def build(*args, **kwargs):
        trainer = build_trainer(*args, **{**kwargs, "compile_anywhere": True})
        for callback in box["callbacks"]:
            trainer.add_callback(callback)
        box["trainer"] = trainer
        return trainer

    build_trainer = rl.build_trainer
    monkeypatch.setattr(rl, "build_trainer", build)
    return box


@pytest.mark.parametrize("merge", [False, True], ids=["adapter", "merged"])
def test_fast_generation_compiles_once_and_lora_steps_do_not_recompile(make_config, captured_trainer,
                                                                       tiny_model_dir, merge):
    """Two GRPO steps that train the LoRA weights (in place) between generations, with gradient checkpointing
    (TRL turns it off and on around each of the step's two chunked generate calls): the decode step's graph is
    compiled in step 1 and never again, with the module guards left out (mode ``default``: the filter goes in
    ``options``) and the decode step's attention packed. With the adapter merged for generation, the same, and the
    base weights end the run exactly as they were loaded."""
    import torch
    from transformers import AutoModelForCausalLM, TrainerCallback

    counts = []

    class Count(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            counts.append(fg.compiled_graphs())

    torch._dynamo.reset()
    config = make_config("rl.steps=2", "rl.generation_compile={backend: eager, mode: default}",
                         "rl.max_completion_length=4",
                         "rl.trl={generation_kwargs: {min_new_tokens: 4}}", "model.gradient_checkpointing=true",
                         "rl.generation_chunks=2", "rl.per_device_batch_size=4",
                         f"rl.generation_merge_lora={str(merge).lower()}")
    captured_trainer["callbacks"].append(Count())
    result = rl.run_rl(config, verifier=FakeVerifier(faster_by_text))
    trainer = captured_trainer["trainer"]
    assert result.status == "done" and result.global_step == 2
    assert trainer.generation_plan.mode == "fast"
    assert trainer.generation_config.cache_implementation == "static"
    assert trainer.generation_config.disable_compile is False
    assert trainer.generation_config.compile_config.options["guard_filter_fn"] is not None
    assert trainer.model.get_base_model().config._attn_implementation == fg.ATTENTION
    assert counts[0] >= 1, "the decode step was never compiled"
    assert counts == [counts[0]] * 2, f"recompiled after step 1: graphs per step {counts}"
    base = trainer.model.get_base_model()
    assert getattr(base, "_tritonrl_merged_generate", False) is merge
    if merge:
        loaded = AutoModelForCausalLM.from_pretrained(config.model.name_or_path).state_dict()
        trained = {k.replace(".base_layer", ""): v for k, v in base.state_dict().items() if "lora_" not in k}
        assert all(torch.equal(trained[k].cpu(), v) for k, v in loaded.items())


def _lora_model(tiny_model_dir, dtype):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=dtype),
                           LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)  # a delta of its own (PEFT starts B at zero)
    return model.eval()


def test_generation_with_the_adapter_merged_and_the_base_weights_restored_exactly(tiny_model_dir, monkeypatch):
    """Inside ``generate`` the adapter is merged (the logits are the unmerged model's, within float32 rounding);
    after it every base weight is bit for bit what it was, in bfloat16 too, where PEFT's unmerge alone leaves them
    changed (``W + d - d``), call after call."""
    import torch
    from transformers import GenerationMixin

    ids = torch.randint(10, 1000, (2, 7))
    model = _lora_model(tiny_model_dir, torch.float32)
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    seen = []
    original = GenerationMixin.generate

    def spy(self, *args, **kwargs):
        with torch.no_grad():
            seen.append((self(input_ids=ids).logits, model.base_model.model.model.layers[0].self_attn.q_proj.merged))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", spy)
    assert fg.merged_lora_generate(model) is None
    model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, pad_token_id=0)
    logits, merged = seen[0]
    assert merged and torch.allclose(logits, expected, atol=1e-4)

    model = _lora_model(tiny_model_dir, torch.bfloat16)
    weights = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}
    tuner = model.base_model
    with torch.no_grad():
        tuner.merge_adapter()
        tuner.unmerge_adapter()
    assert any(not torch.equal(p, weights[n]) for n, p in model.named_parameters() if n in weights)  # PEFT alone
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in weights:
                p.copy_(weights[n])
    fg.merged_lora_generate(model)
    for _ in range(3):
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, pad_token_id=0)
    assert all(torch.equal(p, weights[n]) for n, p in model.named_parameters() if n in weights)
    assert not model.base_model.model.model.layers[0].self_attn.q_proj.merged


def test_the_adapter_stays_unmerged_where_a_merge_cannot_be_undone(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    assert "not a PEFT model" in fg.merged_lora_generate(AutoModelForCausalLM.from_pretrained(tiny_model_dir))
    model = _lora_model(tiny_model_dir, torch.float32)
    model.base_model.model.model.layers[0].self_attn.q_proj.base_layer.weight.requires_grad_(True)
    assert "trained" in fg.merged_lora_generate(model)


def test_the_adapter_stays_unmerged_where_its_copy_would_crowd_the_gpu(tiny_model_dir, monkeypatch):
    import torch

    model = _lora_model(tiny_model_dir, torch.float32)
    adapted = sum(m.get_base_layer().weight.nbytes for m in model.modules() if hasattr(m, "get_base_layer"))
    monkeypatch.setattr(fg, "device_memory", lambda device: int(adapted / fg.MERGE_COPY_SHARE) - 1)
    reason = fg.merged_lora_generate(model)
    assert reason is not None and "GiB" in reason and not getattr(fg.base_model(model), "_tritonrl_merged_generate",
                                                                   False)
    monkeypatch.setattr(fg, "device_memory", lambda device: int(adapted / fg.MERGE_COPY_SHARE) + 1)
    assert fg.merged_lora_generate(model) is None


def test_eager_generation_sets_only_the_kv_cache(make_config, captured_trainer):
    result = rl.run_rl(make_config("rl.generation=eager"), verifier=FakeVerifier(faster_by_text))
    trainer = captured_trainer["trainer"]
    assert result.status == "done"
    assert trainer.generation_plan.mode == "eager" and trainer.generation_config.use_cache is True
    assert trainer.generation_config.disable_compile is True  # TRL's own setting kept
    assert trainer.generation_config.cache_implementation is None



def test_the_decode_step_compiles_without_module_guards_where_torch_can():
    import torch

    skip = torch.compiler.skip_guard_on_all_nn_modules_unsafe
    assert fg.decode_compile_options({"fullgraph": False, "mode": "reduce-overhead"}) == {
        "fullgraph": False, "mode": None, "options": {"triton.cudagraphs": True, "guard_filter_fn": skip}}
    assert fg.decode_compile_options({"backend": "eager", "mode": "default"}) == {
        "backend": "eager", "mode": None, "options": {"guard_filter_fn": skip}}
    kept = {"backend": "eager", "mode": "reduce-overhead"}  # another backend's mode: not translated, guards kept
    assert fg.decode_compile_options(kept) == kept
    own = {"options": {"max_autotune": True}}
    assert fg.decode_compile_options(own) == own


def _grouped_model(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, attn_implementation="sdpa").eval()
    assert model.config.num_key_value_heads < model.config.num_attention_heads  # grouped-query attention
    return model


def test_packed_decode_attention_matches_sdpa_and_repeats_no_key(tiny_model_dir, monkeypatch):
    """A compiled decode step (dynamo's eager backend, no module guards) with the packed attention gives the tokens
    and logits of transformers' SDPA uncompiled; its decode steps hand SDPA the key/value heads, never repeated,
    while the prompt's step runs transformers' own code; after an in-place update of a weight the compiled call
    reads the new values (no guard is needed for that)."""
    import torch
    import torch.nn.functional as F
    from transformers.generation import CompileConfig

    ids = torch.randint(10, 1000, (3, 9), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    settings = dict(max_new_tokens=6, do_sample=False, cache_implementation="static", max_cache_len=32,
                    pad_token_id=0, output_logits=True, return_dict_in_generate=True)

    def generate(model, **extra):
        with torch.no_grad():
            return model.generate(input_ids=ids, attention_mask=mask, **settings, **extra)

    reference = _grouped_model(tiny_model_dir)
    expected = generate(reference)
    model = _grouped_model(tiny_model_dir)
    assert fg.packed_decode_attention(model) and model.config._attn_implementation == fg.ATTENTION
    compile_config = CompileConfig(**fg.decode_compile_options({"backend": "eager", "mode": "default"}))
    compile_config._compile_all_devices = True
    shapes = []
    sdpa = F.scaled_dot_product_attention
    def spy(q, k, v, **kw):
        shapes.append((q.shape[1], k.shape[1], q.shape[2]))  # (query heads, key heads, query rows)
        return sdpa(q, k, v, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    torch._dynamo.reset()
    got = generate(model, compile_config=compile_config, disable_compile=False)
    assert torch.equal(got.sequences, expected.sequences)
    assert max((a - b).abs().max().item() for a, b in zip(got.logits, expected.logits)) < 1e-5
    heads, kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
    decode = [s for s in shapes if s[0] == kv_heads]
    assert decode and all(k == kv_heads and rows == heads // kv_heads for _, k, rows in decode)
    assert (heads, heads, ids.shape[1]) in shapes  # the prompt: transformers' own (keys repeated, no compile)
    with torch.no_grad():
        for m in (model, reference):
            m.lm_head.weight.mul_(-1.0)  # tied to the embeddings: every step's input and output change
    monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa)
    assert torch.equal(generate(model, compile_config=compile_config, disable_compile=False).sequences,
                       generate(reference).sequences)


def test_other_attention_implementations_are_left_alone(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, attn_implementation="eager")
    assert fg.packed_decode_attention(model) is False and model.config._attn_implementation == "eager"


def test_one_static_cache_is_reused_and_generates_what_a_fresh_one_does(tiny_model_dir):
    """Greedy generation with the static cache reused (reset in place) across calls with different prompt
    lengths gives the tokens a fresh cache gives; the second call gets the first call's cache object back."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    def generate_three(reuse: bool):
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        handed = []
        if reuse:
            fg.reuse_static_cache(model)
            prepare = model._prepare_static_cache
            model._prepare_static_cache = lambda *a, **k: handed.append(prepare(*a, **k)) or handed[-1]
        config = GenerationConfig(max_new_tokens=6, do_sample=False, cache_implementation="static",
                                  max_cache_len=64, pad_token_id=0, eos_token_id=1)
        rng = torch.Generator().manual_seed(1)
        outs = []
        for n in (9, 17, 5):
            ids = torch.randint(10, 1000, (3, n), generator=rng)
            mask = torch.ones_like(ids)
            mask[0, :3] = 0
            with torch.no_grad():
                outs.append(model.generate(input_ids=ids, attention_mask=mask, generation_config=config))
        return outs, handed

    fresh, _ = generate_three(False)
    reused, handed = generate_three(True)
    assert all(torch.equal(a, b) for a, b in zip(fresh, reused))
    assert len(handed) == 3 and handed[0] is handed[1] is handed[2]


def test_generate_runs_as_inference_and_training_gets_its_hooks_and_dropout_back(tiny_model_dir, monkeypatch):
    """The hook gradient checkpointing puts on the input embeddings (``output.requires_grad_(True)``) is a graph
    break in a compiled decode step (torch 2.11), and LoRA's dropout drew masks at every decode step: ``generate``
    runs without the hook and in eval mode, and training gets both back (a module left in eval mode stays so)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, GenerationMixin

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                           LoraConfig(r=4, lora_dropout=0.5, target_modules=["q_proj", "v_proj"]))
    base = model.get_base_model()
    embeddings = base.get_input_embeddings()
    seen = []
    original = GenerationMixin.generate

    def spy(self, *args, **kwargs):
        dropouts = [m for m in base.modules() if isinstance(m, torch.nn.Dropout)]
        seen.append((len(embeddings._forward_hooks), any(m.training for m in dropouts) or self.training))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", spy)
    fg.single_input_grad_hooks(model)
    fg.inference_generate(model)
    model.train()
    base.lm_head.eval()  # a module in its own mode keeps it
    base.enable_input_require_grads()
    ids = torch.randint(10, 1000, (2, 5))
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, pad_token_id=0)
    assert seen == [(0, False)]
    assert len(embeddings._forward_hooks) == 1 and base.get_input_embeddings()(ids).requires_grad
    assert model.training and all(m.training for m in base.modules() if isinstance(m, torch.nn.Dropout))
    assert not base.lm_head.training
    base.disable_input_require_grads()
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=2, pad_token_id=0)
    assert seen[-1] == (0, False) and not embeddings._forward_hooks  # none before, none put back


def test_sharded_parameters_generate_eagerly(make_config, monkeypatch):
    monkeypatch.setattr(fg, "_SAID", set())
    monkeypatch.setenv("ACCELERATE_USE_FSDP", "true")
    config = make_config("rl.use_cpu=false")
    assert "sharded across ranks (fsdp)" in fg.fallback_reason(config, "cuda")


def test_float32_embeddings_under_half_autocast_generate_eagerly(tiny_model_dir, monkeypatch):
    """The H200 host's transformers (5.17) sizes a static cache's values in the keys' dtype: float32 keys (rotary
    embedding of float32 hidden states) and bf16 values (autocast) made study two's GRPO fail at its first
    generate. Such a run generates eagerly; bf16 weights, or no autocast, keep the fast path."""
    from types import SimpleNamespace

    import torch
    from transformers import AutoModelForCausalLM

    monkeypatch.setattr(fg, "_SAID", set())
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    trainer = SimpleNamespace(model=model, args=SimpleNamespace(bf16=True, fp16=False))
    assert "float32 weights under bf16 autocast" in fg.mixed_precision_reason(trainer)
    trainer.args.bf16 = False
    assert fg.mixed_precision_reason(trainer) is None
    trainer = SimpleNamespace(model=model.to(torch.bfloat16), args=SimpleNamespace(bf16=True, fp16=False))
    assert fg.mixed_precision_reason(trainer) is None
