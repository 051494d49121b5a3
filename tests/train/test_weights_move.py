"""Training moves the weights: after two steps of every algorithm, every trainable parameter (the LoRA adapters)
has changed and every frozen one has not, as TRL's tests/test_grpo_trainer.py checks.

Two steps without warmup (a warmup step has learning rate 0), because LoRA's B starts at zero: on the first step
A's gradient is exactly zero, so A moves from the second. GRPO and RLOO get a verifier whose reward depends on the text (``faster_by_text``): a verifier that rewards
a whole group alike gives zero advantages and no gradient, and this test would catch it.
"""

import pytest
import torch
from transformers import TrainerCallback

from tests.helpers.fake_verifier import FakeVerifier, faster_by_text
from tritonrl.train.stage_session import StageSession


class WeightWatch(TrainerCallback):
    """Copies the parameters when training begins; lists the ones that did (not) change when it ends."""

    def __init__(self):
        self.trainable: dict[str, torch.Tensor] = {}
        self.unchanged: list[str] | None = None
        self.frozen_changed: list[str] | None = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.trainable = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
        self.frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}

    def on_train_end(self, args, state, control, model=None, **kwargs):
        now = {n: p.detach() for n, p in model.named_parameters()}
        self.unchanged = [n for n, before in self.trainable.items() if torch.equal(before, now[n])]
        self.frozen_changed = [n for n, before in self.frozen.items() if not torch.equal(before, now[n])]


@pytest.fixture()
def watch(monkeypatch):
    """A ``WeightWatch`` on every trainer a stage builds (they all take ``StageSession.callbacks()``)."""
    found = WeightWatch()
    callbacks = StageSession.callbacks
    monkeypatch.setattr(StageSession, "callbacks", lambda self, *a, **k: [*callbacks(self, *a, **k), found])
    return found


@pytest.mark.parametrize("algo", ["sft", "grpo", "rloo", "best-of-n"])
def test_every_trainable_parameter_moves(make_config, watch, algo):
    from tritonrl.train.rl import run_rl
    from tritonrl.train.sft import run_sft

    if algo == "sft":
        result = run_sft(make_config("sft.max_steps=2", "sft.warmup_ratio=0"))
    else:
        config = make_config(f"rl.algo={algo}", "rl.steps=2", "best_of_n.sft_steps_per_round=2", "sft.warmup_ratio=0",
                             "data.max_tasks=1")
        result = run_rl(config, verifier=FakeVerifier(faster_by_text))
    assert result.status == "done" and result.global_step == 2
    assert watch.trainable and all("lora_" in n for n in watch.trainable)  # LoRA on: only the adapters train
    assert watch.unchanged == [], f"{algo}: {len(watch.unchanged)}/{len(watch.trainable)} did not move"
    assert watch.frozen and watch.frozen_changed == []
