"""Chat messages asking a model to rewrite a task with Triton kernels, and feedback for another try.

    from tritonrl.common.prompts import build_messages, build_prompt_text, build_refinement_messages, Attempt
    messages = build_messages(task)                    # [{"role": "system", ...}, {"role": "user", ...}]
    text = build_prompt_text(task, tokenizer)          # the tokenizer's chat template, ready for generation
    template = load_template("configs/prompts/short.yaml")   # a config's prompt_template (None: the default)
    nxt = build_refinement_messages(messages, [Attempt(code, verdict)], max_prompt_tokens=8192)  # turn 2

Refinement turns (``tritonrl eval --turns``, ``rl.turns``): the next prompt is the task's messages, then each
earlier attempt's code (assistant) and the verifier's feedback on it (user, ``format_feedback``), summarised
oldest-first to fit a token budget; the task statement is always kept whole.

A template is a system message and a user message in which ``{task_source}`` (required) and ``{example}`` are
replaced literally; any other braces are kept as written, so templates may show code with dicts or f-strings.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonrl.errors import ConfigError

if TYPE_CHECKING:  # importing tritonrl.verify loads torch; prompts are built where torch may not be wanted
    from tritonrl.tasks.model import KernelTask
    from tritonrl.verify.shared.verdict import VerifyResult

DEFAULT_SYSTEM = (
    "You are an expert GPU programmer who writes fast, correct Triton kernels for PyTorch programs."
)

DEFAULT_USER = """Rewrite the PyTorch program below as a new module named `ModelNew` that uses Triton kernels.

Rules:
- `ModelNew` takes the same constructor arguments as `Model` and creates parameters with the same shapes, in \
the same order (build the same layers, then read their weights in your kernels).
- All computation happens in `@triton.jit` kernels launched from `forward`. Allocating outputs \
(`torch.empty`, `torch.empty_like`) and reshaping are fine; PyTorch compute ops (`torch.matmul`, `F.relu`, \
calling `nn` layers, ...) are not.
- No try/except fallbacks, no reuse of `Model`, nothing that inspects or changes the test harness.
- Outputs must have the reference's shapes and dtypes. Use `input_precision="ieee"` in fp32 `tl.dot`.
- Reply with the complete module (imports, kernels, `ModelNew`) in exactly one ```python code block.
{example}
Program to rewrite:
```python
{task_source}
```"""

EXAMPLE_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.relu(x + y)


batch_size = 16
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

EXAMPLE_SOLUTION = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x + y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        x, y = x.contiguous(), y.contiguous()
        out = torch.empty_like(x)
        n_elements = out.numel()
        grid = (triton.cdiv(n_elements, 1024),)
        add_relu_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)
        return out
'''

EXAMPLE = f"""
Example program:
```python
{EXAMPLE_TASK.rstrip()}
```
Example answer:
```python
{EXAMPLE_SOLUTION.rstrip()}
```
"""

_PLACEHOLDER = re.compile(r"\{(task_source|example)\}")


@dataclass(frozen=True)
class PromptTemplate:
    """The system message, the user message (with ``{task_source}`` and ``{example}``), and whether the
    worked example is shown (when not, ``{example}`` becomes empty)."""

    system: str = DEFAULT_SYSTEM
    user: str = DEFAULT_USER
    include_example: bool = True

    def __post_init__(self) -> None:
        for name in ("system", "user"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"prompt template: '{name}' must be a string")
        if not isinstance(self.include_example, bool):
            raise ConfigError("prompt template: 'include_example' must be true or false")
        if "{task_source}" not in self.user:
            raise ConfigError("prompt template: the user message has no {task_source} placeholder")

    def render_user(self, task_source: str) -> str:
        values = {"task_source": task_source.strip("\n"), "example": EXAMPLE if self.include_example else ""}
        # One pass, so a placeholder spelled inside the task source is never substituted.
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.user)

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTemplate:
        """A ``.yaml``/``.yml`` mapping with keys ``system``, ``user``, ``include_example`` (each optional), or
        any other file: its text is the user message (default system message, example included)."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read prompt template {path}: {exc}") from None
        if path.suffix not in (".yaml", ".yml"):
            return cls(user=text)
        return cls(**_yaml_fields(text, path))


def _yaml_fields(text: str, path: Path) -> dict[str, Any]:
    try:
        from tritonrl.util.yamlfile import read_yaml
    except ImportError:
        raise ConfigError("reading a YAML prompt template needs pyyaml (pip install 'tritonrl[train]')") from None
    data, duplicates = read_yaml(text, f"prompt template {path}")
    if duplicates:
        raise ConfigError(duplicates[0])
    if not isinstance(data, dict):
        raise ConfigError(f"prompt template {path} must be a mapping with keys system, user, include_example")
    known = {f.name for f in dataclasses.fields(PromptTemplate)}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise ConfigError(f"prompt template {path}: unknown keys {unknown} (known: {sorted(known)})")
    return data


def load_template(path: str | Path | None) -> PromptTemplate | None:
    """The template a config names (``data.prompt_template``, ``eval.prompt_template``), or None for the default.

    The one place a template path becomes a ``PromptTemplate``: training, Best-of-N and evaluation all load
    theirs here, so one path cannot mean two prompts."""
    return PromptTemplate.from_file(path) if path else None


def build_messages(task: KernelTask | str, template: PromptTemplate | None = None) -> list[dict[str, str]]:
    """System and user messages asking for ``ModelNew`` for a task (a ``KernelTask`` or its source text)."""
    template = template or PromptTemplate()
    source = task if isinstance(task, str) else task.source
    return [
        {"role": "system", "content": template.system},
        {"role": "user", "content": template.render_user(source)},
    ]


def build_prompt_text(task: KernelTask | str, tokenizer: Any, template: PromptTemplate | None = None,
                      **chat_kwargs: Any) -> str:
    """The messages through the tokenizer's chat template, ending where the assistant's reply starts.

    ``chat_kwargs`` go to ``apply_chat_template`` (e.g. ``enable_thinking=False`` for Qwen3). Templates that
    reject a system role (Gemma's) get the system message prepended to the user message instead.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("the tokenizer has no chat_template; use an instruction-tuned model or set one")
    messages = build_messages(task, template)
    try:
        return _apply(tokenizer, messages, chat_kwargs)
    except Exception as exc:
        if "system" not in str(exc).lower():
            raise
    merged = [{"role": "user", "content": messages[0]["content"] + "\n\n" + messages[1]["content"]}]
    return _apply(tokenizer, merged, chat_kwargs)


def _apply(tokenizer: Any, messages: list[dict[str, str]], chat_kwargs: dict[str, Any]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **chat_kwargs)


# ---------------------------------------------------------------- feedback for multi-turn refinement
# What the next turn's prompt says about an attempt. Leakage policy (docs/evaluation.md#refinement-turns): the
# feedback holds the verifier's own concise error, and of the reference's outputs at most ONE value, the
# worst-off element's `expected X` that an output mismatch names, next to the candidate's value there. Every other
# reference-derived number (a second `expected` value, the reference's range or magnitude) and any tensor dump
# or long list of numbers is replaced by `<redacted>`: trials reuse their seeds from turn to turn, so whole
# reference outputs in feedback could be copied into the next answer.
_STAGE_PROBLEM = {  # keyed by Stage values
    "extract": "no Python code block defining `ModelNew` was found in your answer",
    "static": "the code broke a rule of the task",
    "compile": "the module failed to import, or `ModelNew` failed to construct",
    "tiny": "it failed on a small input",
    "full": "it failed on the full-size inputs",
    "timing": "it was correct, but its runtime could not be measured",
}
# The verdict's own error is capped at verify.shared.verdict.MAX_ERROR_CHARS; feedback shortens it further, to
MAX_FEEDBACK_ERROR_CHARS = 2000  # characters of that error in one feedback message, and to
MAX_FEEDBACK_CHARS = 3500        # characters of a whole feedback message (flags, error, instructions)
REDACTED = "<redacted>"
_QUIET_FLAGS = ("timing_unavailable", "reduced_shapes")  # facts of the machine, not the kernel's faults
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b"
_EXPECTED_VALUE = re.compile(rf"\bexpected ({_NUM})")
_REFERENCE_SCALE = re.compile(rf"(\brange |max \|ref\| )({_NUM})(?: to ({_NUM}))?")
_TENSOR_DUMP = re.compile(r"\b(tensor|array)\(\[[^()]*\)")
_NUMBER_LIST = re.compile(rf"\[\s*(?:{_NUM})(?:\s*,\s*(?:{_NUM})){{7,}}[\s,.]*\]")
FIX_IT = ("Fix the problem and reply with the complete corrected module (imports, kernels, `ModelNew`) in one "
          "```python code block.")
FASTER = "Make it faster if you can, and reply with the complete module in one ```python code block."


def redact_reference_values(error: str) -> str:
    """``error`` with reference data beyond the first ``expected <number>`` replaced by ``<redacted>``."""
    seen = 0

    def expected(match: re.Match) -> str:
        nonlocal seen
        seen += 1
        return match.group(0) if seen == 1 else f"expected {REDACTED}"

    error = _EXPECTED_VALUE.sub(expected, error)
    error = _REFERENCE_SCALE.sub(lambda m: m.group(1) + REDACTED, error)
    error = _TENSOR_DUMP.sub(lambda m: f"{m.group(1)}({REDACTED})", error)
    return _NUMBER_LIST.sub(f"[{REDACTED}]", error)


def format_feedback(result: VerifyResult) -> str:
    """A short user message: why the previous answer failed (stage, flags with rationales, the verifier's error,
    redacted and capped), or, when it was correct, its speedup with its 95% interval; then what to do."""
    if result.correct:
        return _speed_feedback(result)
    if result.declined:  # the task, not the answer: nothing of the reference's to redact
        return f"Your previous answer passed what this machine can judge, but not the rest: {result.declined}\n{FIX_IT}"
    stage = getattr(result.stage, "value", result.stage)
    problem = _STAGE_PROBLEM.get(stage, "it failed")
    lines = [f"Your previous answer failed at the {stage} stage: {problem}."]
    lines += [f"- {flag}{_rationale(flag)}" for flag in result.flags if flag not in _QUIET_FLAGS]
    if result.error:
        error = redact_reference_values(result.error.strip())
        if len(error) > MAX_FEEDBACK_ERROR_CHARS:
            error = error[:MAX_FEEDBACK_ERROR_CHARS] + "\n... (truncated)"
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", error)), default=0))
        lines.append(f"Error:\n{fence}\n{error}\n{fence}")
    text = "\n".join(lines)
    if len(text) > MAX_FEEDBACK_CHARS:  # many flags: cut the list, keep the instruction
        text = text[:MAX_FEEDBACK_CHARS] + "\n... (truncated)"
    return f"{text}\n{FIX_IT}"


def _speed_feedback(result: VerifyResult) -> str:
    from tritonrl.common.reward import speedup_interval

    interval = speedup_interval(result)
    if result.speedup is None:
        said = "Your kernel is correct. Its runtime was not measured on this machine."
    elif interval is None:
        said = f"Your kernel is correct: speedup {result.speedup:.2f}x over the PyTorch reference (no interval)."
    else:
        low, high = interval
        verdict = ("surely faster than the reference" if low > 1 else "surely slower than the reference"
                   if high < 1 else "not distinguishable from the reference's speed")
        said = (f"Your kernel is correct: speedup {result.speedup:.2f}x over the PyTorch reference (95% interval "
                f"{low:.2f}x to {high:.2f}x): {verdict}.")
    flags = [f"- {flag}{_rationale(flag)}" for flag in result.flags if flag not in _QUIET_FLAGS]
    return "\n".join([said, *flags, FASTER])


def _rationale(flag: str) -> str:
    """": <the flag's one-line rationale>", or nothing for a flag this version does not know."""
    from tritonrl.verify.shared.flags import RATIONALE, Flag

    try:
        return ": " + RATIONALE[Flag(flag)]
    except (ValueError, KeyError):
        return ""


def summarize_attempt(result: VerifyResult) -> str:
    """One line: ``correct (speedup 1.20x)`` or ``failed at the compile stage (import_error)``."""
    if result.correct:
        return f"correct (speedup {result.speedup:.2f}x)" if result.speedup is not None else "correct"
    flags = [f for f in result.flags if f not in _QUIET_FLAGS]
    stage = getattr(result.stage, "value", result.stage)
    return f"failed at the {stage} stage" + (f" ({', '.join(flags)})" if flags else "")


# ---------------------------------------------------------------- the next turn's prompt, within a token budget
@dataclass(frozen=True)
class Attempt:
    """One earlier turn as later prompts show it: the code extracted from it (None: none found), its verdict."""

    code: str | None
    result: VerifyResult


@dataclass(frozen=True)
class RefinementPrompt:
    """The messages for the next turn and what had to give way to fit ``max_prompt_tokens``."""

    messages: list[dict[str, str]]
    tokens: int
    n_attempts: int
    n_summarised: int = 0              # oldest attempts reduced to one line each
    latest_code_dropped: bool = False  # even the latest attempt's code did not fit (its feedback is kept)
    over_budget: bool = False          # the task statement and the latest feedback alone exceed the budget

    @property
    def truncated(self) -> bool:
        return self.n_summarised > 0 or self.latest_code_dropped

    def context(self) -> dict[str, Any]:
        """What results rows and logs record about the prompt (``tokens`` as counted)."""
        return {"tokens": self.tokens, "attempts": self.n_attempts, "summarised": self.n_summarised,
                "latest_code_dropped": self.latest_code_dropped, "over_budget": self.over_budget}


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """A deliberately high token count without a tokenizer: 3 characters per token (code tokenizes densely)."""
    return sum(len(m["content"]) // 3 + 4 for m in messages)


def build_refinement_messages(base: list[dict[str, str]], attempts: list[Attempt],
                              max_prompt_tokens: int | None = None,
                              count_tokens: Callable[[list[dict[str, str]]], int] = estimate_tokens,
                              ) -> RefinementPrompt:
    """``base`` (the task's messages, ending with the user message that states the task), then each attempt as
    an assistant message holding its code and a user message with its feedback (``format_feedback``).

    Over ``max_prompt_tokens`` the oldest attempts are summarised, one line each appended to the task message,
    until the prompt fits or only the latest attempt is left whole; then the latest attempt's code is dropped
    (its feedback stays). The task statement is never cut; ``over_budget`` says when even that did not fit."""
    for n_summarised in range(max(1, len(attempts))):
        messages = _layout(base, attempts, n_summarised, keep_latest_code=True)
        tokens = count_tokens(messages)
        if max_prompt_tokens is None or tokens <= max_prompt_tokens or not attempts:
            return RefinementPrompt(messages, tokens, len(attempts), n_summarised,
                                    over_budget=max_prompt_tokens is not None and tokens > max_prompt_tokens)
    n_summarised = len(attempts) - 1
    messages = _layout(base, attempts, n_summarised, keep_latest_code=False)
    tokens = count_tokens(messages)
    return RefinementPrompt(messages, tokens, len(attempts), n_summarised, latest_code_dropped=True,
                            over_budget=tokens > max_prompt_tokens)


def _layout(base: list[dict[str, str]], attempts: list[Attempt], n_summarised: int,
            keep_latest_code: bool) -> list[dict[str, str]]:
    messages = [dict(m) for m in base]
    if n_summarised:
        lines = [f"- attempt {i}: {summarize_attempt(a.result)}" for i, a in enumerate(attempts[:n_summarised], 1)]
        messages[-1]["content"] += ("\n\nYour earlier attempts, summarised to fit the context:\n"
                                    + "\n".join(lines))
    for i, attempt in enumerate(attempts[n_summarised:], n_summarised + 1):
        if i == len(attempts) and not keep_latest_code:
            answer = "(the code of this attempt is left out to fit the context)"
        elif attempt.code is None:
            answer = "(this answer had no python code block)"
        else:
            answer = f"```python\n{attempt.code.strip()}\n```"
        messages += [{"role": "assistant", "content": answer},
                     {"role": "user", "content": f"Feedback on attempt {i}:\n{format_feedback(attempt.result)}"}]
    return messages
