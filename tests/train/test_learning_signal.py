"""GRPO through the real verifier on generated tasks gets groups that differ, and the run says so.

A CPU-sized piece of the learning recipe (docs/results.md): two generated tasks, the demo's Qwen2 architecture at
2 layers, two GRPO steps with the real verifier. So that a policy that sometimes succeeds costs seconds rather than
minutes of SFT, the model is taught one task's prompt with two answers: the reference kernel, and the same
kernel storing ``-x`` (wrong). Sampling then picks either, so a group holds correct and wrong kernels, and the
signal-health log (``<run>/grpo/signal_health.json``) must show non-zero reward variance. The full recipe runs
as ``benchmarks/studies/learning_demo.py --config configs/demo_cpu.yaml`` (slow test below).
"""

import importlib.util
import json
import os
from pathlib import Path

import pytest

from tritonrl.config import load_config
from tritonrl.taskgen import generate_tasks
from tritonrl.tasks import load_tasks
from tritonrl.verify.shared.verdict import Stage, VerifyResult

ROOT = Path(__file__).resolve().parents[2]
STORE = "tl.store(out_ptr + offs, x, mask=mask)"


def learning_demo():
    spec = importlib.util.spec_from_file_location("learning_demo", ROOT / "benchmarks" / "studies" / "learning_demo.py")
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
@pytest.mark.xfail(strict=True, reason="2026-11-26: the model taught the two answers does not reproduce them "
                   "(format_rate 0, 3 of 4 completions clipped at 360 tokens), so every group is flat; until then the "
                   "test had not run at all (an import removed long ago). Not yet investigated.")
def test_grpo_groups_differ_with_the_real_verifier(tmp_path):
    from tritonrl.common.prompts import build_messages, load_template
    from tritonrl.train.rl import run_rl

    demo = learning_demo()
    tasks_dir = tmp_path / "tasks"
    generate_tasks(2, 0, "train", tasks_dir, verifier=AcceptAll())  # references: tests/taskgen/test_taskgen.py
    task = next(t for t in load_tasks(tasks_dir) if STORE in (t.solution or ""))
    template = tmp_path / "short.txt"
    template.write_text("Write ModelNew with Triton for:\n{task_source}\n")
    model_dir = demo.build_demo_model(tmp_path / "model", hidden=256, layers=2, heads=4, kv_heads=2)
    teach_two_answers(model_dir, build_messages(task, load_template(str(template))),
                      [task.solution, task.solution.replace(STORE, STORE.replace(", x,", ", -x,"))])
    config = load_config(None, [
        f"model.name_or_path={model_dir}", "model.dtype=float32", "lora.enabled=false",
        f"data.source={tasks_dir}", f"data.tasks=[{task.name}]", f"data.prompt_template={template}",
        f"run.run_dir={tmp_path / 'run'}", "run.save_steps=100", "run.logging_steps=1",
        "rl.num_generations=4", "rl.per_device_batch_size=4", "rl.max_completion_length=360", "rl.temperature=0.7",
        "rl.top_p=0.9",
        "rl.steps=2", "rl.use_cpu=true", "rl.learning_rate=1e-5", "rl.curriculum=false", "rl.verify_cache=true",
        "verify.device=cpu", "verify.workers=2", "verify.multi_input=false", "verify.timing=false",
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
    template = str(ROOT / "configs" / "prompts" / "short.yaml")
    sets = [f"data.prompt_template={template}", f"eval.prompt_template={template}", "sft.max_steps=40",
            "run.save_steps=20", "rl.steps=2", "rl.per_device_batch_size=8", "rl.stop_without_signal=0", "eval.k=2"]
    code = demo.main(["--config", str(ROOT / "configs" / "demo_cpu.yaml"), "--train-n", "3", "--sft-n", "3",
                      "--heldout-n", "2", "--validation-n", "2", "--validation-k", "1", "--turns", "2", "--vocab", "2000",
                      "--hidden", "64", "--layers", "1", "--heads", "2", "--kv-heads", "1",
                      *[arg for s in sets for arg in ("--set", s)]])
    assert code == 0
    run_dir = tmp_path / "runs" / "demo_cpu"
    summary = json.loads((run_dir / "learning_demo.json").read_text())
    assert {"criterion", "criterion_met", "heldout_tasks", "families", "k", "base", "sft", "rl", "control",
            "rl_minus_sft", "control_minus_sft", "runs", "machine", "commit", "wall_s", "sft_selection",
            "length_audit", "rl_turns2", "nearest_training_combination"} <= set(summary)
    assert summary["k"] == 2 and summary["heldout_tasks"] == 2 and all("ci95" in summary[a] for a in ("sft", "rl"))
    assert [r["arm"] for r in summary["runs"]] == ["base", "sft", "rl", "rl_turns2", "control"]
    assert [s["step"] for s in summary["sft_selection"]["scores"]] == [20, 40]
    assert (run_dir / "figures" / "learning_demo.png").exists()


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
    assert summary["heldout_tasks"] == 2 and summary["k"] == 8
    assert summary["rl"]["correct_at_1"] == pytest.approx(0.875) and summary["base"]["correct_at_1"] == 0
    assert summary["rl"]["ci95"] == [0.75, 1.0]  # tasks resampled (6/8 and 8/8), not 16 independent samples
    assert summary["rl_minus_sft"]["mean"] == pytest.approx(0.5)
    assert summary["rl_minus_sft"]["ci95"][0] == pytest.approx(0.5)  # both tasks +0.5: no spread
    assert summary["control_minus_sft"]["mean"] == 0
    assert summary["criterion"]["rl_minus_sft_min"] == 0.15 and summary["criterion_met"] is True
    assert {"machine", "commit"} <= set(summary)


def test_criterion_needs_all_three_conditions():
    demo = learning_demo()
    ok = {"mean": 0.2, "ci95": [0.05, 0.3]}
    flat = {"mean": 0.0, "ci95": [-0.05, 0.05]}
    assert demo.criterion_met(ok, flat)
    assert not demo.criterion_met({"mean": 0.14, "ci95": [0.05, 0.2]}, flat)  # under 15 points
    assert not demo.criterion_met({"mean": 0.2, "ci95": [-0.01, 0.4]}, flat)  # interval reaches 0
    assert not demo.criterion_met(ok, {"mean": 0.1, "ci95": [0.02, 0.2]})   # the control gained too
    assert not demo.criterion_met(ok, None)


def test_splits_and_subsets_of_the_recipe():
    demo = learning_demo()
    rows = [{"name": f"t{i}", "family": ("ew", "row", "gemm")[i % 3], "signature": f"{('ew', 'row', 'gemm')[i % 3]}:"
             f"op{i % 7}>relu"} for i in range(42)]
    held, val = demo.split_by_signature(rows, 10)
    assert len(val) >= 10 and len(held) + len(val) == 42
    assert not {r["signature"] for r in held} & {r["signature"] for r in val}  # no op combination in both
    sft = demo.stratified(rows, 9)
    assert sorted(r["family"] for r in sft) == ["ew"] * 3 + ["gemm"] * 3 + ["row"] * 3
    assert demo.stratified(rows, 9) == sft  # deterministic
    assert demo.edit_distance(["a", "b", "c"], ["a", "c"]) == 1 and demo.edit_distance(["a"], ["b", "c"]) == 2
    near = demo.nearest_training([{"name": "h", "signature": "row:mul>softmax>tanh"},
                                  {"name": "g", "signature": "gemm:relu"}],
                                 [{"signature": "row:mul>softmax"}, {"signature": "row:exp>sum>tanh>abs"}])
    assert near["per_task"] == {"h": 1, "g": None} and near["histogram"] == {"1": 1, "None": 1}


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
    from tritonrl.train.reward_adapters import VerifierReward

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
    mixed = [good, bad, good, bad, bad, bad]  # groups of 2: (1, 0), (1, 0), (0, 0)
    shuffled = VerifierReward({task.key: task}, verifier=CountingVerifier(), group_size=2, shuffle=True, seed=1)
    outs = [shuffled(completions=mixed, task_key=[task.key] * 6) for _ in range(8)]
    truth = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert any(o != truth for o in outs)
    for o in outs:  # permuted within each group only: every group keeps its rewards, the all-wrong one stays so
        assert [sorted(o[i:i + 2]) for i in (0, 2, 4)] == [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    assert shuffled.history[-1].correct_rate == pytest.approx(2 / 6)  # metrics describe the true verdicts


def test_reward_cache_hits_conversational_completions():
    """TRL passes conversational completions as message lists: the cache keys on their extracted code."""
    from tritonrl.tasks import get_task
    from tritonrl.train.reward_adapters import VerifierReward

    class CodeVerifier(CountingVerifier):
        def verify_many(self, items):
            self.calls.append(len(items))
            return [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True,
                                 correct="good" in str(item.completion)) for item in items]

    task = get_task("l1_relu")
    say = lambda word: [{"role": "assistant", "content": f"Here:\n```python\nclass ModelNew: {word} = 1\n```"}]  # noqa: E731
    verifier = CodeVerifier()
    reward = VerifierReward({task.key: task}, verifier=verifier, group_size=4, cache=True)
    logged = {}
    rewards = reward(completions=[say("good"), say("good"), say("bad"), say("good")], task_key=[task.key] * 4,
                     log_metric=logged.__setitem__)
    assert rewards == [1.0, 1.0, 0.0, 1.0] and verifier.calls == [2]
    assert logged["verify/cache_hit_rate"] == pytest.approx(2 / 4)


def test_correct_by_turn_counts_a_trajectory_from_its_first_correct_turn(tmp_path):
    demo = learning_demo()
    rows = [("a", 0, 1, False), ("a", 0, 2, True), ("a", 1, 1, True), ("b", 0, 1, False), ("b", 0, 2, False),
            ("b", 0, 3, True), ("b", 1, 1, False), ("b", 1, 2, False), ("b", 1, 3, False)]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps({"task": t, "sample": s, "turn": n, "result": {"correct": c}}) + "\n"
                            for t, s, n, c in rows))
    assert demo.correct_by_turn(path) == {"correct@1": 0.25, "correct@2": 0.5, "correct@3": 0.75}
    from types import SimpleNamespace

    config = SimpleNamespace(run=SimpleNamespace(seed=0), eval=SimpleNamespace(k=2))
    demo.record_heldout_run(tmp_path, "rl_turns3", tmp_path, config)  # recorded: the first turn's correct@1
    row = json.loads((tmp_path / "heldout_runs.jsonl").read_text())
    assert row["correct_at_1"] == 0.25 and row["by_turn"]["correct@3"] == 0.75 and row["tasks"] == 2


def test_grpo_stops_and_says_so_when_groups_have_no_variance(tmp_path):
    """rl.stop_without_signal: at that step, a run whose groups were (nearly) all zero-variance stops with a note."""
    from types import SimpleNamespace

    from tritonrl.train.rl import NO_SIGNAL_FILE, no_signal_stop

    config = SimpleNamespace(rl=SimpleNamespace(stop_without_signal=3, no_signal_share=0.9))
    flat = SimpleNamespace(health=[{"signal/frac_zero_std_groups": 1.0}] * 3)
    [callback] = no_signal_stop(config, flat, tmp_path)
    control = SimpleNamespace(should_training_stop=False)
    callback.on_step_end(None, SimpleNamespace(global_step=2), control)
    assert not control.should_training_stop  # not yet at the step
    callback.on_step_end(None, SimpleNamespace(global_step=3), control)
    assert control.should_training_stop and json.loads((tmp_path / NO_SIGNAL_FILE).read_text())["step"] == 3
    mixed = SimpleNamespace(health=[{"signal/frac_zero_std_groups": 1.0}, {"signal/frac_zero_std_groups": 0.5}])
    [callback] = no_signal_stop(config, mixed, tmp_path / "b")
    control = SimpleNamespace(should_training_stop=False)
    callback.on_step_end(None, SimpleNamespace(global_step=3), control)
    assert not control.should_training_stop and not (tmp_path / "b" / NO_SIGNAL_FILE).exists()
    off = SimpleNamespace(rl=SimpleNamespace(stop_without_signal=0, no_signal_share=0.9))
    assert no_signal_stop(off, flat, tmp_path) == []


def test_whole_line_tokenizer_is_exact_and_shorter_on_kernels():
    """The demo's tokenizer (whole-line BPE trained on the train split): decodes back to the same bytes, and a
    held-out-like kernel (not in its corpus) takes far fewer tokens than with the word-level one."""
    from tritonrl.common.llm import build_tiny_tokenizer
    from tritonrl.tasks import get_task, load_tasks

    tasks = [t for t in load_tasks("bundled") if t.solution]
    unseen = get_task("l2_swiglu")
    corpus = [t.solution for t in tasks if t.name != unseen.name] + [t.source for t in tasks if t.name != unseen.name]
    lines = build_tiny_tokenizer(4000, corpus, whole_lines=True)
    words = build_tiny_tokenizer(4000, corpus)
    ids = lines(unseen.solution)["input_ids"]
    assert lines.decode(ids) == unseen.solution
    assert len(ids) < 0.6 * len(words(unseen.solution)["input_ids"])


def test_plan_costs_each_phase_from_the_measured_warm_up():
    from types import SimpleNamespace

    from tritonrl.config import PipelineConfig

    demo = learning_demo()
    config = load_config(str(ROOT / "configs" / "demo_cpu.yaml"), [], schema=PipelineConfig)
    args = demo.parse_args(["--config", "x", "--validation-n", "32", "--heldout-n", "96", "--turns", "3"])
    m = {"device": "cpu", "gen_s_per_token_rl_batch": 0.02, "gen_s_per_token_eval_batch": 0.02, "sft_step_s": 0.4,
         "grpo_update_s": 2.0, "verify_s_per_completion": 0.25}
    report = demo.plan(config, args, m)
    step = 320 * 0.02 + 32 * 0.25 + 2.0  # generation at the completion limit, verification, the update
    assert report["grpo_step_s"] == pytest.approx(step)
    assert report["phases_s"]["rl"] == round(config.rl.steps * step) and report["phases_s"]["sft"] == round(600 * 0.4)
    evaluation = 12 * 320 * 0.02 + 384 * 0.25  # 96 tasks x 4 samples in calls of 32
    assert report["phases_s"]["eval (base, sft, rl)"] == round(3 * evaluation)
    assert report["total_s"] == pytest.approx(sum(report["phases_s"].values()), abs=3)
    no_control = demo.plan(config, SimpleNamespace(**{**vars(args), "no_control": True}), m)
    assert no_control["phases_s"]["control (rl + eval)"] == 0


def test_the_gpu_profile_is_the_cpu_recipe_scaled_up():
    """configs/demo.yaml (the H100 run) keeps what the criterion was fixed for in the CPU recipe v3 (the prompt,
    the RL rate, groups and steps, the reward, the held-out samples per task), and adds timing on the device."""
    from tritonrl.config import PipelineConfig

    cpu = load_config(str(ROOT / "configs" / "demo_cpu.yaml"), [], schema=PipelineConfig)
    gpu = load_config(str(ROOT / "configs" / "demo.yaml"), [], schema=PipelineConfig)
    same = lambda c: (c.data.prompt_template, c.eval.prompt_template, c.rl.learning_rate, c.rl.num_generations,  # noqa: E731
                      c.rl.per_device_batch_size, c.rl.steps, c.rl.beta, c.reward.preset, c.eval.k, c.sft.max_steps)
    assert same(gpu) == same(cpu)
    assert gpu.verify.device == gpu.eval.device == "cuda" and gpu.verify.timing and not cpu.verify.timing
    assert gpu.run.run_dir != cpu.run.run_dir
