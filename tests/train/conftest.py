"""Fixtures for training tests: one tiny local model per session, a small CPU config, a fake verifier."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from tests.helpers.fake_verifier import FakeVerifier, names_model_new
from tritonrl.config import TrainingConfig, load_config


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    from tritonrl.common.llm import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture()
def short_template(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("Write ModelNew with Triton for:\n{task_source}\n")
    return path


@pytest.fixture()
def make_config(tiny_model_dir, short_template, tmp_path):
    """A TrainingConfig for seconds-long CPU runs: 2 short tasks, 8-token completions, 1-2 steps."""

    def make(*overrides: str) -> TrainingConfig:
        base = [
            f"model.name_or_path={tiny_model_dir}", "model.dtype=float32",
            "data.levels=[1]", "data.max_tasks=2", f"data.prompt_template={short_template}",
            f"run.run_dir={tmp_path / 'run'}", "run.save_steps=1", "run.report_to=none",
            "sft.max_steps=1", "sft.per_device_batch_size=1", "sft.gradient_accumulation_steps=1",
            "sft.max_length=1024", "sft.use_cpu=true",
            "rl.num_generations=2", "rl.per_device_batch_size=2", "rl.max_completion_length=8",
            "rl.steps=1", "rl.use_cpu=true", "rl.learning_rate=1e-3",
            "best_of_n.n=2", "best_of_n.top_k=1", "best_of_n.rounds=1", "best_of_n.sft_steps_per_round=1",
            "verify.device=cpu", "verify.workers=2", "verify.multi_input=false", "verify.timing=false",
        ]
        return load_config(None, base + list(overrides))

    return make


@pytest.fixture()
def fake_verifier():
    return FakeVerifier(names_model_new)
