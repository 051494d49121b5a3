import torch

from tritonrl.common.llm import build_tiny_model, load_model
from tritonrl.config import ModelConfig


def test_tiny_model_has_a_local_tokenizer_with_chat_template(tiny_model_dir):
    model, tok = load_model(ModelConfig(name_or_path=str(tiny_model_dir), dtype="float32"))
    assert 1000 <= len(tok) <= 4096
    text = tok.apply_chat_template([{"role": "user", "content": "relu"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    code = "@triton.jit\ndef k(x_ptr):\n    pass\n"
    assert tok.decode(tok(code)["input_ids"]) == code  # byte-level: lossless round trip
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    assert build_tiny_model(tiny_model_dir) == tiny_model_dir  # reused, not rebuilt


def test_adapter_dir_loads_merged(tiny_model_dir, tmp_path):
    from peft import LoraConfig, get_peft_model

    base, tok = load_model(ModelConfig(name_or_path=str(tiny_model_dir), dtype="float32"))
    peft_model = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    peft_model.save_pretrained(tmp_path / "adapter")
    tok.save_pretrained(tmp_path / "adapter")
    merged, _ = load_model(ModelConfig(dtype="float32"), str(tmp_path / "adapter"))
    fresh, _ = load_model(ModelConfig(name_or_path=str(tiny_model_dir), dtype="float32"))
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.allclose(dict(merged.named_parameters())[name], dict(fresh.named_parameters())[name])
