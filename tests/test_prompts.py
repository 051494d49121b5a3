"""Tests for tritonrl.common.prompts: messages, templates from files, a real (locally built) chat template, feedback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonrl.common.prompts import (
    EXAMPLE_SOLUTION,
    EXAMPLE_TASK,
    FIX_IT,
    MAX_FEEDBACK_CHARS,
    MAX_FEEDBACK_ERROR_CHARS,
    REDACTED,
    Attempt,
    PromptTemplate,
    build_messages,
    build_prompt_text,
    build_refinement_messages,
    estimate_tokens,
    format_feedback,
)
from tritonrl.errors import ConfigError
from tritonrl.extract import extract_code
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.shared.flags import RATIONALE, Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult

RELU = Path(__file__).parents[1] / "src" / "tritonrl" / "tasks" / "bundled" / "level1" / "l1_relu.py"


@pytest.fixture
def task() -> KernelTask:
    return KernelTask(name="l1_relu", level=1, source=RELU.read_text(), origin="bundled")


# ---------------------------------------------------------------- messages
def test_messages_hold_rules_task_and_example(task):
    messages = build_messages(task)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert task.source.strip() in user
    for rule in ("ModelNew", "@triton.jit", "try/except", "same constructor arguments", "```python"):
        assert rule in user
    assert EXAMPLE_SOLUTION.strip() in user and EXAMPLE_TASK.strip() in user
    # The task comes last, after the example, so the model answers the task and not the example.
    assert user.index(EXAMPLE_SOLUTION.strip()) < user.index(task.source.strip())


def test_without_example(task):
    user = build_messages(task, PromptTemplate(include_example=False))[1]["content"]
    assert "add_relu_kernel" not in user and "{example}" not in user
    assert task.source.strip() in user


def test_placeholders_are_replaced_literally():
    source = "x = {'a': 1}  # {example} and {task_source} inside the task are not placeholders\n"
    template = PromptTemplate(system="S", user="{ literal } {task_source}|{example}", include_example=False)
    messages = build_messages(source, template)
    assert messages == [{"role": "system", "content": "S"}, {"role": "user", "content": "{ literal } " +
                                                              source.strip() + "|"}]


def test_example_in_prompt_is_a_well_formed_answer():
    """The worked example must itself pass extraction, or the model learns a format we cannot read."""
    assert extract_code(f"```python\n{EXAMPLE_SOLUTION}```") == EXAMPLE_SOLUTION


def test_example_solution_matches_example_task():
    from tests.helpers.reference_check import check_solution

    check_solution(EXAMPLE_TASK, EXAMPLE_SOLUTION, seeds=(0, 1))


def test_example_solution_passes_static_checks():
    static = pytest.importorskip("tritonrl.verify.static")
    assert static.run_static_checks(EXAMPLE_SOLUTION, strict=True) == []


# ---------------------------------------------------------------- templates from files
def test_template_from_yaml(tmp_path, task):
    path = tmp_path / "t.yaml"
    path.write_text("system: Be brief.\nuser: |\n  Task:\n  {task_source}\ninclude_example: false\n")
    template = PromptTemplate.from_file(path)
    assert template == PromptTemplate(system="Be brief.", user="Task:\n{task_source}\n", include_example=False)
    assert build_messages(task, template)[1]["content"] == "Task:\n" + task.source.strip() + "\n"


def test_template_from_text_file(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Do it:\n{task_source}\n{example}")
    template = PromptTemplate.from_file(path)
    assert template.user == "Do it:\n{task_source}\n{example}" and template.include_example


@pytest.mark.parametrize("name, text, message", [
    ("bad.yaml", "user: [unclosed\n", "not valid YAML"),
    ("twice.yaml", "user: '{task_source}'\nuser: again\n", "twice.yaml:2: duplicate key 'user'"),
    ("list.yaml", "- a\n- b\n", "must be a mapping"),
    ("unknown.yaml", "user: '{task_source}'\ncolour: red\n", "unknown keys ['colour']"),
    ("noplace.yaml", "user: Write a kernel.\n", "no {task_source}"),
    ("type.yaml", "user: '{task_source}'\ninclude_example: maybe\n", "include_example"),
    ("num.yaml", "system: 3\nuser: '{task_source}'\n", "'system' must be a string"),
    ("noplace.txt", "Write a kernel.", "no {task_source}"),
])
def test_bad_template_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("{", r"\{").replace("}", r"\}")):
        PromptTemplate.from_file(path)


def test_missing_template_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        PromptTemplate.from_file(tmp_path / "nope.yaml")


# ---------------------------------------------------------------- a real chat template, built locally
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
NO_SYSTEM = (
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def make_tokenizer(chat_template: str | None):
    """A tiny WordLevel tokenizer trained on a few strings: no download, a real PreTrainedTokenizerFast."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]", "<|im_start|>", "<|im_end|>"])
    backend.train_from_iterator(["write a triton kernel", "class ModelNew forward", "import torch"], trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", eos_token="<|im_end|>")
    tokenizer.chat_template = chat_template
    return tokenizer


def test_prompt_text_with_chat_template(task):
    text = build_prompt_text(task, make_tokenizer(CHATML))
    system, user = (m["content"] for m in build_messages(task))
    assert text == (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                    "<|im_start|>assistant\n")


def test_prompt_text_merges_system_when_template_rejects_it(task):
    text = build_prompt_text(task, make_tokenizer(NO_SYSTEM))
    system, user = (m["content"] for m in build_messages(task))
    assert text == f"<start_of_turn>user\n{system}\n\n{user}<end_of_turn>\n<start_of_turn>model\n"


def test_prompt_text_needs_a_chat_template(task):
    with pytest.raises(ConfigError, match="chat_template"):
        build_prompt_text(task, make_tokenizer(None))


# ---------------------------------------------------------------- feedback
def test_feedback_names_stage_flags_and_error():
    result = VerifyResult(stage=Stage.STATIC, flags=[Flag.TORCH_COMPUTE.value, "from_the_future"],
                          error="line 12: torch.relu(x) in forward")
    text = format_feedback(result)
    assert "static stage" in text
    assert RATIONALE[Flag.TORCH_COMPUTE] in text and "- from_the_future\n" in text
    assert "line 12: torch.relu(x) in forward" in text
    assert "```python" in text


def test_feedback_truncates_long_errors_and_keeps_fences_intact():
    error = "```\n" + "x" * (MAX_FEEDBACK_ERROR_CHARS * 3)
    text = format_feedback(VerifyResult(stage=Stage.COMPILE, flags=[Flag.IMPORT_ERROR.value], error=error))
    assert len(text) < MAX_FEEDBACK_ERROR_CHARS + 1000 and "(truncated)" in text
    assert "\n````\n```\n" in text  # the error's own ``` cannot close the fence around it


@pytest.mark.parametrize("stage", [s for s in Stage if s != Stage.DONE])
def test_feedback_for_every_failing_stage(stage):
    text = format_feedback(VerifyResult(stage=stage))
    assert f"failed at the {stage.value} stage" in text and "Error:" not in text


def test_feedback_when_correct():
    text = format_feedback(VerifyResult(stage=Stage.DONE, valid=True, compiled=True, correct=True, speedup=1.5))
    assert "correct: speedup 1.50x over the PyTorch reference (no interval)" in text


# ---------------------------------------------------------------- refinement: feedback policy and trajectories
def test_feedback_keeps_one_reference_value_and_redacts_the_rest():
    error = ("output 0: 12/4096 values off, max abs error 0.0012 (expected 0.731059, got 0.732259; atol=0.0001 "
             "rtol=0.0001)\noutput 1: expected 2.5 here; tensor([0.1, 0.2,\n 0.3]) range -1.5 to 3e+04, "
             "max |ref| 2.5, [1, 2, 3, 4, 5, 6, 7, 8, 9]")
    text = format_feedback(VerifyResult(stage=Stage.FULL, flags=[Flag.OUTPUT_MISMATCH.value], error=error))
    assert "expected 0.731059, got 0.732259" in text  # the one value the verifier chose to show
    assert "2.5" not in text and "0.2" not in text and "3e+04" not in text and "5, 6" not in text
    assert text.count(REDACTED) == 5


def test_feedback_is_capped_whatever_the_flags():
    flags = [Flag.OUTPUT_MISMATCH.value] * 200
    text = format_feedback(VerifyResult(stage=Stage.FULL, flags=flags, error="x" * 10_000))
    assert len(text) < MAX_FEEDBACK_CHARS + 300 and text.endswith(FIX_IT)


def test_correct_feedback_reports_speedup_interval_or_its_absence():
    timed = VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                         speedup=1.08, timing={"speedup_ci95": [0.97, 1.19]})
    assert ("speedup 1.08x over the PyTorch reference (95% interval 0.97x to 1.19x): not distinguishable from the "
            "reference's speed.") in format_feedback(timed)
    cpu = VerifyResult(stage=Stage.TIMING, valid=True, compiled=True, tiny_correct=True, correct=True,
                       flags=[Flag.TIMING_UNAVAILABLE.value])
    assert format_feedback(cpu) == ("Your kernel is correct. Its runtime was not measured on this machine.\n"
                                    "Make it faster if you can, and reply with the complete module in one "
                                    "```python code block.")


TINY_TASK = "class Model:\n    def forward(self, x):\n        return x.relu()"
WRONG = VerifyResult(stage=Stage.FULL, valid=True, compiled=True, tiny_correct=True, flags=["output_mismatch"],
                     error="output 0: 3/16 values off, max abs error 1 (expected 0, got -1; atol=0.0001 rtol=0.0001)")
BROKEN = VerifyResult(stage=Stage.COMPILE, valid=True, flags=["import_error"], error="NameError: name 'tl' is not "
                      "defined")

TURN_3_GOLDEN = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": f"Task:\n{TINY_TASK}"},
    {"role": "assistant", "content": "```python\nkernel_v1\n```"},
    {"role": "user", "content": """Feedback on attempt 1:
Your previous answer failed at the compile stage: the module failed to import, or `ModelNew` failed to construct.
- import_error: """ + RATIONALE[Flag.IMPORT_ERROR] + """
Error:
```
NameError: name 'tl' is not defined
```
""" + FIX_IT},
    {"role": "assistant", "content": "```python\nkernel_v2\n```"},
    {"role": "user", "content": """Feedback on attempt 2:
Your previous answer failed at the full stage: it failed on the full-size inputs.
- output_mismatch: """ + RATIONALE[Flag.OUTPUT_MISMATCH] + """
Error:
```
output 0: 3/16 values off, max abs error 1 (expected 0, got -1; atol=0.0001 rtol=0.0001)
```
""" + FIX_IT},
]


def test_trajectory_prompts_golden():
    base = build_messages(TINY_TASK, PromptTemplate(system="S", user="Task:\n{task_source}", include_example=False))
    first = build_refinement_messages(base, [])
    assert first.messages == base and not first.truncated
    third = build_refinement_messages(base, [Attempt("kernel_v1", BROKEN), Attempt("kernel_v2", WRONG)])
    assert third.messages == TURN_3_GOLDEN and third.context()["summarised"] == 0


def test_over_budget_summarises_oldest_attempts_and_keeps_the_task():
    base = build_messages(TINY_TASK, PromptTemplate(system="S", user="Task:\n{task_source}", include_example=False))
    attempts = [Attempt("k" * 3000, BROKEN), Attempt("m" * 3000, WRONG), Attempt(None, BROKEN)]
    full = estimate_tokens(build_refinement_messages(base, attempts).messages)
    fit = build_refinement_messages(base, attempts, max_prompt_tokens=full - 100)
    assert fit.n_summarised == 1 and not fit.latest_code_dropped and fit.tokens <= full - 100
    assert fit.messages[1]["content"] == (f"Task:\n{TINY_TASK}\n\nYour earlier attempts, summarised to fit the "
                                          "context:\n- attempt 1: failed at the compile stage (import_error)")
    assert [m["role"] for m in fit.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert fit.messages[4]["content"] == "(this answer had no python code block)"

    tight = build_refinement_messages(base, attempts, max_prompt_tokens=estimate_tokens(base) + 5)
    assert tight.n_summarised == 2 and tight.over_budget  # even task + latest feedback do not fit: task kept whole
    assert tight.messages[1]["content"].startswith(f"Task:\n{TINY_TASK}\n\n")
    lone = build_refinement_messages(base, [Attempt("k" * 9000, WRONG)], max_prompt_tokens=estimate_tokens(base) + 400)
    assert lone.latest_code_dropped and not lone.over_budget and "k" * 100 not in str(lone.messages)


def test_feedback_on_a_declined_attempt_says_the_machine_could_not_judge_it():
    result = VerifyResult(Stage.FULL, valid=True, compiled=True, tiny_correct=True, correct=None,
                          flags=[Flag.DECLINED.value], declined="not judged on this CPU: its sizes are over the budget")
    text = format_feedback(result)
    assert text.startswith("Your previous answer passed what this machine can judge, but not the rest: not judged on "
                           "this CPU") and "failed" not in text
