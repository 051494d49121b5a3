"""GRPO through the real verifier on generated tasks gets groups that differ, and the run says so.

A CPU-sized piece of the learning recipe (docs/results.md): two generated tasks, the demo's Qwen2 architecture at
2 layers, two GRPO steps with the real verifier. So that a policy that sometimes succeeds costs seconds rather than
minutes of SFT, the model is taught one task's prompt with two answers: the reference kernel, and the same
kernel storing ``-x`` (wrong). Sampling then picks either, so a group holds correct and wrong kernels, and the
signal-health log (``<run>/grpo/signal_health.json``) must show non-zero reward variance. The full recipe runs
as ``benchmarks/learning_demo.py --config configs/demo_cpu.yaml`` (slow test below).
"""

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tritonrl.config import load_config
from tritonrl.tasks import load_tasks
from tritonrl.tasks.generate import generate_tasks
from tritonrl.verify.result import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[2]
STORE = "tl.store(out_ptr + offs, x, mask=mask)"


def learning_demo():
    spec = importlib.util.spec_from_file_location("learning_demo", ROOT / "benchmarks" / "learning_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class AcceptAll:
    def verify_many(self, items):
        return [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
                for _ in items]


def teach_two_answers(model_dir: Path, prompt: list[dict], answers: list[str], steps: int = 90) -> None:
    """Plain next-token training on (prompt, answer) for both answers until the model has them by heart."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: one thread is faster than two fighting other jobs
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    head = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
    batch = []
    for answer in answers:
        p = tokenizer(head, add_special_tokens=False)["input_ids"]
        c = tokenizer(f"```python\n{answer.strip()}\n```<|im_end|>", add_special_tokens=False)["input_ids"]
        ids = torch.tensor([p + c])
        labels = ids.clone()
        labels[0, :len(p)] = -100
        batch.append((ids, labels))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(steps):
        loss = sum(model(input_ids=ids, labels=labels).loss for ids, labels in batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    torch.set_num_threads(threads)
    model.save_pretrained(model_dir)


@pytest.mark.slow  # ~110 s of CPU time (6.5 min wall on the shared 2 cores): over the default-suite budget
def test_grpo_groups_differ_with_the_real_verifier(tmp_path):
    from tritonrl.train.data import prompt_messages
    from tritonrl.train.rl import run_rl

    demo = learning_demo()
    tasks_dir = tmp_path / "tasks"
    generate_tasks(2, 0, "train", tasks_dir, verifier=AcceptAll())  # references: tests/tasks/test_generate.py
    task = next(t for t in load_tasks(tasks_dir) if STORE in (t.solution or ""))
    template = tmp_path / "short.txt"
    template.write_text("Write ModelNew with Triton for:\n{task_source}\n")
    model_dir = demo.build_demo_model(tmp_path / "model", hidden=256, layers=2, heads=4, kv_heads=2)
    teach_two_answers(model_dir, prompt_messages(task, str(template)),
                      [task.solution, task.solution.replace(STORE, STORE.replace(", x,", ", -x,"))])
    config = load_config(None, [
        f"model.name_or_path={model_dir}", "model.dtype=float32", "lora.enabled=false",
        f"data.source={tasks_dir}", f"data.tasks=[{task.name}]", f"data.prompt_template={template}",
        f"run.run_dir={tmp_path / 'run'}", "run.save_steps=100", "run.logging_steps=1",
        "rl.num_generations=4", "rl.per_device_batch_size=4", "rl.max_completion_length=360", "rl.temperature=0.7",
        "rl.top_p=0.9",
        "rl.steps=2", "rl.use_cpu=true", "rl.learning_rate=1e-5", "rl.curriculum=false", "rl.verify_cache=true",
        "verify.device=cpu", "verify.workers=2", "verify.num_trials=1", "verify.timing=false",
    ])
    result = run_rl(config)
    assert result.status == "done"
    health = json.loads((tmp_path / "run" / "grpo" / "signal_health.json").read_text())
    assert health["steps_logged"] == 2 and not health["no_signal"]
    varied = [s for s in health["steps"] if s["true_reward_std"] > 0]
    assert varied and all(s["zero_std_groups"] < 1 for s in varied)
    assert all(s["verify_s"] is not None and s["completion_len"] > 0 for s in health["steps"])
    assert (tmp_path / "run" / "grpo" / "signal_health.md").read_text().count("\n| ") == 3


@pytest.mark.slow
def test_cpu_recipe_end_to_end(tmp_path):
    demo = learning_demo()
    os.chdir(tmp_path)  # the config's run paths are relative
    code = demo.main(["--config", str(ROOT / "configs" / "demo_cpu.yaml"), "--train-n", "2", "--sft-n", "1",
                      "--heldout-n", "2", "--hidden", "256", "--layers", "2", "--heads", "4", "--kv-heads", "2"])
    assert code == 0
    summary = json.loads((tmp_path / "runs" / "demo_cpu" / "learning_demo.json").read_text())
    assert {"device", "date", "heldout_tasks", "samples_per_task", "base", "sft", "rl", "control"} <= set(summary)
    assert summary["samples_per_task"] == 8 and summary["heldout_tasks"] == 2


def test_summary_json_from_a_run_directory(tmp_path):
    """The layout the CPU recipe writes (eval/<model>/results.jsonl, control/eval/rl/) -> learning_demo.json keys."""
    demo = learning_demo()
    correct = {"base": [0, 0], "sft": [2, 4], "rl": [6, 8], "control": [2, 4]}  # correct of 8, per task
    for model, per_task in correct.items():
        out = tmp_path / ("control/eval/rl" if model == "control" else f"eval/{model}")
        out.mkdir(parents=True)
        rows = [{"task": f"t{i}", "sample": s, "result": {"correct": s < c}} for i, c in enumerate(per_task)
                for s in range(8)]
        (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = demo.summarize(tmp_path, device="test")
    assert summary["heldout_tasks"] == 2 and summary["samples_per_task"] == 8
    assert summary["rl"]["correct_rate"] == 14 / 16 and summary["base"]["correct_rate"] == 0
    low, high = demo.wilson(14, 16)
    assert summary["rl"]["ci95_low"] == low and 0.63 < low < 0.65 and 0.96 < high < 0.97
    assert summary["rl_minus_sft"]["mean"] == pytest.approx(0.5)
    assert summary["rl_minus_sft"]["ci95_low"] == pytest.approx(0.5)  # both tasks +0.5: no spread
    assert summary["control_minus_sft"]["mean"] == 0


class CountingVerifier:
    """Correct when the completion says 'good'; records how many items each call verified."""

    def __init__(self):
        self.calls = []

    def verify_many(self, items):
        self.calls.append(len(items))
        return [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True,
                             correct="good" in item.completion) for item in items]


def test_reward_cache_shuffle_and_signal_metrics():
    from tritonrl.tasks import get_task
    from tritonrl.train.rewards import VerifierReward

    task = get_task("l1_relu")
    good, bad = "```python\nclass ModelNew: good = 1\n```", "```python\nclass ModelNew: bad = 1\n```"
    completions = [good, good, bad, bad, bad, bad]
    logged = {}
    verifier = CountingVerifier()
    reward = VerifierReward({task.key: task}, verifier=verifier, group_size=2, cache=True)
    rewards = reward(completions=completions, task_key=[task.key] * 6, log_metric=logged.__setitem__)
    assert rewards == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0] and verifier.calls == [2]  # 2 distinct codes verified
    assert logged["verify/cache_hit_rate"] == pytest.approx(4 / 6)
    assert logged["signal/frac_zero_std_groups"] == 1.0 and logged["signal/reward_std"] > 0
    reward(completions=[good, bad], task_key=[task.key] * 2, log_metric=logged.__setitem__)
    assert verifier.calls == [2] and logged["signal/frac_zero_std_groups"] == 0.0  # all from the cache
    shuffled = VerifierReward({task.key: task}, verifier=CountingVerifier(), group_size=2, shuffle=True, seed=1)
    outs = [shuffled(completions=completions, task_key=[task.key] * 6) for _ in range(5)]
    assert all(sorted(o) == sorted(rewards) for o in outs) and any(o != rewards for o in outs)
    assert shuffled.history[-1].correct_rate == pytest.approx(2 / 6)  # metrics describe the true verdicts
