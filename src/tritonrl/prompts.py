"""Chat messages asking a model to rewrite a task with Triton kernels, and feedback for another try.

    from tritonrl.prompts import build_messages, build_prompt_text, format_feedback, PromptTemplate
    messages = build_messages(task)                    # [{"role": "system", ...}, {"role": "user", ...}]
    text = build_prompt_text(task, tokenizer)          # the tokenizer's chat template, ready for generation
    template = PromptTemplate.from_file("configs/prompts/short.yaml")

A template is a system message and a user message in which ``{task_source}`` (required) and ``{example}`` are
replaced literally; any other braces are kept as written, so templates may show code with dicts or f-strings.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tritonrl.errors import ConfigError

if TYPE_CHECKING:  # importing tritonrl.verify loads torch; prompts are built where torch may not be wanted
    from tritonrl.tasks.model import KernelTask
    from tritonrl.verify.result import VerifyResult

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
        import yaml
    except ImportError:
        raise ConfigError("reading a YAML prompt template needs pyyaml (pip install 'tritonrl[train]')") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"prompt template {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"prompt template {path} must be a mapping with keys system, user, include_example")
    known = {f.name for f in dataclasses.fields(PromptTemplate)}
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise ConfigError(f"prompt template {path}: unknown keys {unknown} (known: {sorted(known)})")
    return data


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
_STAGE_PROBLEM = {  # keyed by Stage values
    "extract": "no Python code block defining `ModelNew` was found in your answer",
    "static": "the code broke a rule of the task",
    "compile": "the module failed to import, or `ModelNew` failed to construct",
    "tiny": "it failed on a small input",
    "full": "it failed on the full-size inputs",
    "timing": "it was correct, but its runtime could not be measured",
}
MAX_ERROR_CHARS = 2000


def format_feedback(result: VerifyResult) -> str:
    """A short user message saying why the previous answer failed, asking for a corrected one."""
    stage = getattr(result.stage, "value", result.stage)
    if stage == "done":
        speed = f" (speedup {result.speedup:.2f}x)" if result.speedup is not None else ""
        return (f"Your kernel is correct{speed}. Make it faster if you can, and reply with the complete "
                "module in one ```python code block.")
    problem = _STAGE_PROBLEM.get(stage, "it failed")
    lines = [f"Your previous answer failed at the {stage} stage: {problem}."]
    lines += [f"- {flag}{_rationale(flag)}" for flag in result.flags]
    if result.error:
        error = result.error.strip()
        if len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS] + "\n... (truncated)"
        fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", error)), default=0))
        lines.append(f"Error:\n{fence}\n{error}\n{fence}")
    lines.append("Fix the problem and reply with the complete corrected module (imports, kernels, `ModelNew`) "
                 "in one ```python code block.")
    return "\n".join(lines)


def _rationale(flag: str) -> str:
    """": <the flag's one-line rationale>", or nothing for a flag this version does not know."""
    from tritonrl.verify.flags import RATIONALE, Flag

    try:
        return ": " + RATIONALE[Flag(flag)]
    except (ValueError, KeyError):
        return ""
