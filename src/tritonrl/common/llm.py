"""Load causal LMs and their tokenizers; build a tiny local model for tests and the smoke config.

``load_model(name_or_path)`` takes a hub id, a local model directory, or a PEFT adapter directory (an SFT
stage's LoRA output): adapters are merged into their base so the next stage starts from exactly what SFT
trained. ``build_tiny_model(out_dir)`` (or ``model.name_or_path: tiny:DIR``, or
``python -m tritonrl.common.llm DIR``) needs no download: a 2-layer Qwen2 (hidden 64) and a byte-level BPE
tokenizer trained here on the bundled tasks and solutions, with a ChatML chat template.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
import transformers
from packaging.version import Version
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast

from tritonrl.config import ModelConfig
from tritonrl.errors import ConfigError

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
BUNDLED_DIR = Path(__file__).resolve().parent.parent / "tasks" / "bundled"


def _dtype_kwargs(dtype: str) -> dict:
    """transformers >= 4.56 calls it ``dtype``; older releases ``torch_dtype``. The release numbers decide, so a
    4.56 pre-release (``4.56.0.dev0``) counts as 4.56."""
    value = dtype if dtype == "auto" else getattr(torch, dtype)
    return {"dtype": value} if Version(transformers.__version__).release >= (4, 56) else {"torch_dtype": value}


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / "adapter_config.json").exists()


def load_tokenizer(name_or_path: str, trust_remote_code: bool = False):
    """The tokenizer saved at ``name_or_path``. One saved from a bare ``tokenizers`` object (our local ones:
    ``tokenizer_class`` TokenizersBackend) is loaded as saved: ``AutoTokenizer`` would pick the class of the model's
    type (Qwen2Tokenizer next to a qwen2 config) and replace the saved pre-tokenizer with that class's own, so the
    text would be split otherwise than the merges were trained on (transformers 5)."""
    config = Path(name_or_path) / "tokenizer_config.json"
    saved_class = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    if saved_class in ("TokenizersBackend", "PreTrainedTokenizerFast"):
        tokenizer = PreTrainedTokenizerFast.from_pretrained(name_or_path)
    else:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def resolve_model_path(name_or_path: str) -> str:
    """``tiny:DIR`` builds (once) the tiny local model in DIR and returns that directory; anything else is
    returned as given (the run manifest records local paths absolute)."""
    if name_or_path.startswith("tiny:"):
        from tritonrl.common import ranks

        out_dir = name_or_path.removeprefix("tiny:")
        if ranks.is_main():  # one writer; the other ranks then find the finished build
            build_tiny_model(out_dir)
        ranks.barrier()
        return str(build_tiny_model(out_dir))
    return name_or_path


def load_model(config: ModelConfig, name_or_path: str | None = None):
    """(model, tokenizer) for ``name_or_path`` (default ``config.name_or_path``); adapters are merged."""
    path = resolve_model_path(name_or_path or config.name_or_path)
    kwargs = {"trust_remote_code": config.trust_remote_code, **_dtype_kwargs(config.dtype)}
    if config.attn_implementation:
        kwargs["attn_implementation"] = config.attn_implementation
    try:
        if is_adapter_dir(path):
            from peft import AutoPeftModelForCausalLM

            with zero3_init_disabled():  # merging needs whole weights; ZeRO-3 partitions the engine later
                model = AutoPeftModelForCausalLM.from_pretrained(path, **kwargs).merge_and_unload()
        else:
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as exc:
        raise ConfigError(f"cannot load model {path!r}: {str(exc).splitlines()[0]}") from None
    return model, load_tokenizer(path, config.trust_remote_code)


@contextmanager
def zero3_init_disabled() -> Iterator[None]:
    """Build models whole inside the block even when a ZeRO-3 config is registered (training arguments built
    under a DeepSpeed launch make transformers partition every new model with ``deepspeed.zero.Init``)."""
    from transformers.integrations import deepspeed as hf_deepspeed

    saved = hf_deepspeed._hf_deepspeed_config_weak_ref
    hf_deepspeed.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = saved


def merged_from_state_dict(model, state: dict):
    """A whole CPU copy of ``model`` (a PEFT model or a plain one, whose own parameters may be sharded or
    empty) holding the full ``state`` (``accelerator.get_state_dict``), with its LoRA merged in. The copy takes
    ``state``'s tensors as its own (no second copy of the weights) and merges into them in place."""
    from peft import PeftModel, get_peft_model

    peft = isinstance(model, PeftModel)
    base_config = (model.get_base_model() if peft else model).config
    with zero3_init_disabled(), torch.device("meta"):
        copy = AutoModelForCausalLM.from_config(base_config)
        if peft:
            copy = get_peft_model(copy, model.peft_config[model.active_adapter])
    copy.load_state_dict({k: v.detach().to("cpu") for k, v in state.items()}, strict=True, assign=True)
    retie_embeddings(copy.get_base_model() if peft else copy)
    return copy.merge_and_unload() if peft else copy


def retie_embeddings(model) -> None:
    """A gathered state dict (FSDP's full state dict) holds a tied embedding twice, as two tensors, and
    ``load_state_dict(assign=True)`` unties them: tie them again when the two are equal, as they are when training
    left them one parameter; an output layer that differs stays its own, with the config saying so. Untied, the
    1.5B rehearsal's merged final/ held a second 233M-parameter copy (``tie_word_embeddings: false``)."""
    if not getattr(model.config, "tie_word_embeddings", False):
        return
    out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    if out is None or inp is None or out.weight is inp.weight:
        return
    if out.weight.shape == inp.weight.shape and torch.equal(out.weight, inp.weight):
        model.tie_weights()
    else:
        model.config.tie_word_embeddings = False


def _training_corpus() -> list[str]:
    files = sorted(BUNDLED_DIR.rglob("*.py"))
    if not files:
        raise ConfigError(f"no bundled task files under {BUNDLED_DIR} to train the tiny tokenizer on")
    return [f.read_text() for f in files]


def build_tiny_tokenizer(vocab_size: int = 3000, extra_corpus: list[str] | None = None,
                         whole_lines: bool = False) -> PreTrainedTokenizerFast:
    """Byte-level BPE trained on the bundled sources (plus ``extra_corpus``, e.g. a training split's tasks and
    references): code tokenizes compactly, any byte still encodes.

    ``whole_lines``: merges may cross spaces and punctuation within a line (pieces of up to 24 characters), not
    only within a word: on generated kernels with a 4,000-token vocabulary the longest reference answer is ~160
    tokens instead of ~880, which makes every generation phase of a CPU run ~5x cheaper."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    if whole_lines:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split("\n", "merged_with_previous"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
                                  max_token_length=24 if whole_lines else None)
    corpus = _training_corpus() + list(extra_corpus or [])
    corpus.append("<|im_start|>system\nuser\nassistant\n```python\n```\n")
    tok.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        bos_token=None, unk_token=None)
    tokenizer.chat_template = CHATML_TEMPLATE
    return tokenizer


def build_tiny_model(out_dir: str | Path, vocab_size: int = 3000, seed: int = 0) -> Path:
    """Write a tiny Qwen2 causal LM and its locally trained tokenizer to ``out_dir``; returns the path.

    Reuses an existing build (marked by ``tiny.json``) so tests and smoke runs share one.
    """
    from transformers import Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    if (out / "tiny.json").exists():
        return out
    tokenizer = build_tiny_tokenizer(vocab_size)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "tiny.json").write_text(json.dumps({"vocab_size": len(tokenizer), "seed": seed}) + "\n")
    return out


if __name__ == "__main__":
    import sys

    print(build_tiny_model(sys.argv[1] if len(sys.argv) > 1 else "runs/tiny-model"))
