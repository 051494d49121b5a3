"""generation: model specs (hub ids, directories, run manifests) and the transformers generator on the tiny model."""

import json

import pytest

from tritonrl.common.generation import HFGenerator, ModelSource, Sampling, resolve_model
from tritonrl.common.manifest import RunManifest
from tritonrl.common.prompts import build_messages, load_template
from tritonrl.errors import UserError
from tritonrl.tasks import get_task


def test_resolve_model_from_hub_id_dirs_and_manifest(tmp_path):
    assert resolve_model("Qwen/Qwen2.5-Coder-7B-Instruct") == ModelSource(
        "Qwen/Qwen2.5-Coder-7B-Instruct")
    adapter = tmp_path / "run" / "sft" / "final"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "from/adapter"}))
    manifest = RunManifest(tmp_path / "run")
    manifest.start("sft")
    manifest.record("sft", model=adapter, tokenizer=adapter, base_model="from/manifest")
    manifest.finish("sft")
    got = resolve_model(str(tmp_path / "run"))
    assert got == ModelSource(base="from/manifest", adapter=str(adapter), tokenizer=str(adapter))
    assert resolve_model(str(adapter)).base == "from/adapter"  # the adapter's own record
    assert resolve_model(f"{tmp_path / 'run'}:sft") == got
    with pytest.raises(UserError, match="asked for 'rl'"):
        resolve_model(f"{tmp_path / 'run'}:rl")
    with pytest.raises(UserError, match="no stage 'grpo'"):
        resolve_model(f"{tmp_path / 'run'}:grpo")
    assert resolve_model("tiny:runs/tiny-model").base == "tiny:runs/tiny-model"
    with pytest.raises(UserError, match="model path not found"):
        resolve_model(str(tmp_path / "missing"))


def test_hf_generator_batches_prompts_and_leaves_the_tokenizer_as_it_was(tmp_path):
    pytest.importorskip("transformers")
    from tritonrl.common.llm import build_tiny_model, load_model
    from tritonrl.config import ModelConfig

    model, tokenizer = load_model(ModelConfig(name_or_path=str(build_tiny_model(tmp_path / "tiny")),
                                              dtype="float32"))
    template = load_template(None)
    prompts = [build_messages(get_task(name), template) for name in ("l1_relu", "l2_swiglu", "l1_tanh")]
    side = tokenizer.padding_side
    sampled = HFGenerator(model, tokenizer, Sampling(temperature=1.0, max_new_tokens=4, seed=0, batch_size=2))
    assert [len(texts) for texts in sampled.generate(prompts, k=3)] == [3, 3, 3]
    assert tokenizer.padding_side == side  # left padding for generation only: a trainer may share the tokenizer
    batched = HFGenerator(model, tokenizer, Sampling(max_new_tokens=4, batch_size=2)).generate(prompts, k=1)
    one_by_one = HFGenerator(model, tokenizer, Sampling(max_new_tokens=4, batch_size=1)).generate(prompts, k=1)
    assert batched == one_by_one  # greedy: left padding changes nothing
    greedy = HFGenerator(model, tokenizer, Sampling(max_new_tokens=4, batch_size=2)).generate(prompts, k=2)
    assert greedy == [[texts[0], texts[0]] for texts in batched]  # k greedy samples: one answer k times
