"""Tests for tritonrl.extract: a fixture set of messy real-world completions, then property-based tests.

Fixtures: tests/fixtures/completions/cases.json lists each case (input file, expected code file or null, reason).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tritonrl.extract import (
    ExtractReason,
    extract_code,
    extract_with_reason,
    normalize_code,
    parse_python,
    strip_thinking,
)

FIXTURES = Path(__file__).parent / "fixtures" / "completions"
CASES = json.loads((FIXTURES / "cases.json").read_text())


def load_input(name: str):
    path = FIXTURES / name
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    with open(path, encoding="utf-8", newline="") as f:  # newline="": keep the bytes exactly as written
        return f.read()


# ---------------------------------------------------------------- fixtures
def test_fixture_set_is_large_and_varied():
    assert len(CASES) >= 20
    reasons = {case["reason"] for case in CASES}
    assert {"fenced", "unfenced", "no_modelnew", "no_fenced_block", "empty", "only_thinking"} <= reasons


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fixture(case):
    result = extract_with_reason(load_input(case["input"]))
    assert result.reason == ExtractReason(case["reason"]), case["note"]
    if case["expected"] is None:
        assert result.code is None
    else:
        expected = (FIXTURES / case["expected"]).read_text(encoding="utf-8")
        assert result.code == normalize_code(expected), case["note"]
        assert extract_code(load_input(case["input"])) == result.code


def test_syntax_error_block_is_returned_and_marked():
    case = next(c for c in CASES if c["name"] == "syntax_error_in_block")
    result = extract_with_reason(load_input(case["input"]))
    assert result.code is not None and not result.parses


def test_truncated_block_is_marked():
    case = next(c for c in CASES if c["name"] == "unclosed_fence_truncated")
    result = extract_with_reason(load_input(case["input"]))
    assert result.truncated and result.parses


def test_extract_imports_neither_torch_nor_triton():
    code = "import sys, tritonrl.extract; print('torch' in sys.modules, 'triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# ---------------------------------------------------------------- small rules
def test_strip_thinking():
    assert strip_thinking("a<think>b</think>c") == "ac"
    assert strip_thinking("a<think>b") == "a"
    assert strip_thinking("b</think>c</think>d") == "d"
    assert strip_thinking("<THINK>x</THINK>y<thinking>z</thinking>") == "y"
    assert strip_thinking("<think>a<think>b</think>c</think>d") == "d"


@pytest.mark.parametrize("weird", [
    None, b"\xff\xfe```python\nclass ModelNew: pass\n```", 42, 3.5, object(), [], {}, [None], [[[]]],
    {"content": 7}, {"role": "assistant"}, [{"role": "assistant", "content": None}], "\ud800```\nx\n```",
    "```" * 10_000, "````\n```\n``\n~~~~~", "<think>" * 1000, "</think>" * 1000, "(" * 100_000, "\x00" * 10,
    "class ModelNew(" + "[" * 5000, "-" * 200_000 + "1", "```python\n" + "\n" * 100_000,
])
def test_weird_inputs_never_raise(weird):
    result = extract_with_reason(weird)
    assert result.reason != ExtractReason.EXTRACTOR_ERROR
    assert (result.code is None) == (result.reason not in (ExtractReason.FENCED, ExtractReason.UNFENCED))


def test_result_unpacks_as_code_and_reason():
    code, reason = extract_with_reason("no code here")
    assert code is None and reason == ExtractReason.NO_FENCED_BLOCK and reason == "no_fenced_block"


def test_bytes_are_decoded():
    assert extract_code(b"```python\nclass ModelNew:\n    pass\n```") == "class ModelNew:\n    pass\n"


def test_huge_completion_is_fast_enough():
    code = "class ModelNew:\n    pass\n"
    text = ("blah " * 20 + "\n") * 50_000 + "```python\n" + code + "```\n"
    assert extract_code(text) == code


# ---------------------------------------------------------------- properties
IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda s: s not in __import__("keyword").kwlist)
# Prose: no backticks or tildes (no fences), no angle brackets (no think tags), no leading spaces.
PROSE_LINE = st.text(st.characters(codec="utf-8", exclude_characters="`~<>\r\n", exclude_categories=("Cs", "Cc")),
                     max_size=60).map(str.strip)
PROSE = st.lists(PROSE_LINE, max_size=4).map("\n".join)


@st.composite
def modelnew_code(draw) -> str:
    """Valid Python defining ModelNew: a kernel and a module with random names, constants and comments."""
    kernel, arg, const = draw(IDENT), draw(IDENT), draw(st.integers(1, 4096))
    comment = draw(PROSE_LINE)
    blank = draw(st.sampled_from(["\n", "\n\n", "\n    \n"]))
    code = (f"import torch\nimport triton\nimport triton.language as tl\n\nBLOCK_{kernel.upper()} = {const}\n"
            f"\n\n@triton.jit\ndef {kernel}_k({arg}_ptr, n, BLOCK: tl.constexpr):\n"
            f"    # {comment}\n    pid = tl.program_id(0)\n{blank}"
            f"\nclass ModelNew(torch.nn.Module):\n    def forward(self, {arg}):\n        return {arg}\n")
    if draw(st.booleans()):
        code += f"\n\ndef helper_{kernel}():\n    return {draw(st.integers())}\n"
    ast.parse(code)
    return code


OTHER_BLOCK = st.sampled_from([
    "x = ModelNew()\nprint(x)\n", "pip install triton\n", "class Model(torch.nn.Module):\n    pass\n",
    "def f(x):\n    return x\n", "",
])
DRAFT = "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


@st.composite
def fence(draw):
    char = draw(st.sampled_from(["`", "~"]))
    return char * draw(st.integers(3, 5)), draw(st.sampled_from(["", "python", "py", "Python", "triton", "python3"]))


def fenced(code: str, marker: str, lang: str, indent: str = "", closed: bool = True) -> str:
    body = "\n".join(indent + line if line else line for line in code.rstrip("\n").split("\n"))
    return f"{indent}{marker}{lang}\n{body}\n" + (f"{indent}{marker}\n" if closed else "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(code=modelnew_code(), data=st.data())
def test_wrapped_code_is_recovered_exactly(code, data):
    marker, lang = data.draw(fence())
    indent = data.draw(st.sampled_from(["", "  ", "   ", "    "]))
    parts = [data.draw(PROSE)]
    if data.draw(st.booleans()):  # thinking with a draft answer inside
        parts.append("<think>\n" + data.draw(PROSE) + "\n" + fenced(DRAFT, "```", "python") + "</think>")
    if data.draw(st.booleans()):  # an earlier draft outside thinking
        parts.append(fenced(DRAFT, "```", "python") + data.draw(PROSE))
    trailing = data.draw(st.lists(OTHER_BLOCK, max_size=2))
    closed = bool(trailing) or data.draw(st.booleans())  # only the very last block may be left open
    parts.append(fenced(code, marker, lang, indent, closed))
    for other in trailing:
        parts += [data.draw(PROSE), fenced(other, "```", data.draw(st.sampled_from(["", "python"])))]
    if closed:
        parts.append(data.draw(PROSE))
    text = "\n".join(parts)
    if data.draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    assert extract_code(text) == normalize_code(code)
    assert extract_code({"role": "assistant", "content": text}) == normalize_code(code)


LONE_BACKSLASH_CODE = "import torch\nimport triton\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n"


@settings(max_examples=50, deadline=None)
@given(code=modelnew_code(), prose=PROSE)
@example(code=LONE_BACKSLASH_CODE, prose="\\")  # regression: a lone "\" line (a line continuation) was kept
def test_unfenced_code_after_prose_is_recovered(code, prose):
    # Prose that is itself Python, or has a code-looking line (a "# heading"), is legitimately kept.
    assume(not prose.strip() or not _parses(prose))
    assume(not re.search(r"^(import|from|class|def|async|@|#|\"\"\"|''')", prose, re.MULTILINE))
    assert extract_code(prose + "\n" + code) == normalize_code(code)


def test_lone_backslash_line_before_code_is_not_code():
    # "\\\nimport torch" parses (a line continuation), so the whole text used to be returned, "\\" line and all
    assert extract_code("\\\n" + LONE_BACKSLASH_CODE) == LONE_BACKSLASH_CODE
    assert extract_code("Here it is: \\\n" + LONE_BACKSLASH_CODE) == LONE_BACKSLASH_CODE


def _parses(text: str) -> bool:
    return parse_python(text) is not None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_random_text_never_raises(text):
    result = extract_with_reason(text)
    assert result.reason != ExtractReason.EXTRACTOR_ERROR


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30) | st.binary(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["role", "content", "type", "text", "x"]), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_random_structures_never_raise(obj):
    assert extract_with_reason(obj).reason != ExtractReason.EXTRACTOR_ERROR


TEXTY = st.text(st.sampled_from(list("`~\n <>/thinkgclasModelNew:()=\t\r#p")), max_size=200)


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXTY, st.text()))
def test_idempotent_on_own_output(text):
    code = extract_code(text)
    if code is not None:
        assert extract_code(code) == code


@settings(max_examples=100, deadline=None)
@given(code=modelnew_code(), data=st.data())
def test_idempotent_on_wrapped_code(code, data):
    marker, lang = data.draw(fence())
    first = extract_code(data.draw(PROSE) + "\n" + fenced(code, marker, lang))
    assert first is not None and extract_code(first) == first


def test_an_answer_in_parts_takes_the_earlier_blocks_that_define_what_it_uses():
    """Only the blocks that define a name the chosen one reads and binds nowhere, the nearest first, in order; a
    complete block, and blocks that define nothing it needs (a usage example, prose in a fence), are left out."""
    kernel = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"
    old = "@triton.jit\ndef k(x_ptr):\n    return 0\n"
    other = "def unused():\n    return 1\n"
    module = "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        k[(1,)](x)\n"
    usage = "m = ModelNew()\nprint(m)\n"
    fence = "```python\n{}```\n"
    text = "".join(fence.format(b) for b in (old, kernel, other, module, usage))
    result = extract_with_reason(text)
    assert result.reason is ExtractReason.FENCED and result.joined == 1 and result.parses
    assert result.code == normalize_code(kernel.rstrip("\n") + "\n\n\n" + module)
    complete = kernel + "\n" + module
    alone = extract_with_reason(fence.format(other) + fence.format(complete))
    assert alone.joined == 0 and alone.code == normalize_code(complete)
