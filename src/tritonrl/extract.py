"""Model text -> the candidate's Python source, or None (a format error). Pure: no torch, no triton.

    from tritonrl.extract import extract_code, extract_with_reason
    code = extract_code(completion)              # str | None
    result = extract_with_reason(completion)     # ExtractResult(code, reason, ...)

``completion`` may be a string, bytes, a chat message dict (``content`` a string or a list of parts) or a list of
messages (the last assistant message is used). The rules, in order (docs/extraction.md has examples):

1. Thinking is never the answer: text inside ``<think>``/``<thinking>`` is dropped, an unclosed opening tag hides
   everything after it, and a closing tag with no opening one (DeepSeek-R1/Qwen3 templates put the opening tag
   in the prompt) hides everything before it.
2. Fenced blocks (``` or ~~~, three or more, any or no info string, indented inside lists, ``\\r\\n`` endings; a
   fence left open at the end is truncated output and runs to the end): the LAST block that defines
   ``ModelNew`` wins, so drafts before it and usage examples after it are ignored; earlier blocks that define
   names it reads and binds nowhere (the kernel of an answer in parts) are put before it (``_with_definitions``).
3. Otherwise the whole text, when it parses as Python and defines ``ModelNew``.
4. Otherwise, only when there is no fenced block at all: the text from its first code-looking line (``import``,
   ``class``, ``@`` ...), when that parses and defines ``ModelNew``, or when it does not parse but has a
   ``class ModelNew`` line.

"Defines ModelNew" is decided on the AST (a ``class ModelNew`` or a ``ModelNew = ...`` assignment) where the code
parses, and by a line regex where it does not. Code that does not parse is still returned: the verifier reports it
as a syntax error, a more useful signal (to the model, and in reports) than a format error.

Extraction never raises: any input, however malformed, gives ``None`` and a reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tritonrl.util.astlock import parse_source


class ExtractReason(str, Enum):
    FENCED = "fenced"                    # ok: a fenced block defining ModelNew
    UNFENCED = "unfenced"                # ok: unfenced Python defining ModelNew
    EMPTY = "empty"                      # no text at all
    ONLY_THINKING = "only_thinking"      # text, but all of it inside a think block (often: truncated thinking)
    NO_FENCED_BLOCK = "no_fenced_block"  # no fenced block, and the text is not Python defining ModelNew
    NO_MODELNEW = "no_modelnew"          # fenced blocks, but none defines ModelNew
    BAD_INPUT = "bad_input"              # not a string, message or message list; or no assistant message
    EXTRACTOR_ERROR = "extractor_error"  # a bug here; reported rather than raised so a training run survives


@dataclass(frozen=True)
class ExtractResult:
    """What was extracted and why. ``code`` is None exactly when extraction failed.

    n_blocks: fenced blocks found outside thinking. truncated: the chosen block's fence was never closed.
    parses: the returned code parses as Python (False also when nothing was returned). joined: earlier blocks
    put before the chosen one because they define names it uses (rule 2).
    """

    code: str | None
    reason: ExtractReason
    n_blocks: int = 0
    truncated: bool = False
    parses: bool = False
    joined: int = 0

    @property
    def ok(self) -> bool:
        return self.code is not None

    def __iter__(self):
        """``code, reason = extract_with_reason(completion)``."""
        return iter((self.code, self.reason))


@dataclass(frozen=True)
class FencedBlock:
    code: str
    info: str      # the text after the opening fence, e.g. "python"
    closed: bool   # False: the fence was still open at the end of the text


# ---------------------------------------------------------------- completion -> text
_END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<｜end▁of▁sentence｜>", "</s>")


def completion_text(completion: Any) -> str | None:
    """The assistant's text in a completion, with ``\\n`` line endings; None if there is none."""
    text = _raw_text(completion)
    if text is None:
        return None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _strip_end_tokens(text)


def _strip_end_tokens(text: str) -> str:
    """End-of-turn tokens left by decoding without ``skip_special_tokens`` are not code."""
    stripped = text.rstrip()
    while stripped.endswith(_END_TOKENS):
        token = next(t for t in _END_TOKENS if stripped.endswith(t))
        stripped = stripped[: -len(token)].rstrip()
        text = stripped + "\n"
    return text


def _raw_text(completion: Any) -> str | None:
    if completion is None or isinstance(completion, str):
        return completion
    if isinstance(completion, (bytes, bytearray)):
        return bytes(completion).decode("utf-8", errors="replace")
    if isinstance(completion, dict):
        if "content" in completion:
            return _content_text(completion["content"])
        return _content_text(completion.get("text"))
    if isinstance(completion, (list, tuple)):
        if any(isinstance(m, dict) and "role" in m for m in completion):
            # Conversation: the answer is the last assistant turn (TRL passes [{"role": "assistant", ...}]).
            replies = [m for m in completion if isinstance(m, dict) and m.get("role") == "assistant"]
            return _raw_text(replies[-1]) if replies else None
        return _content_text(completion)  # a bare list of content parts
    return None


def _content_text(content: Any) -> str | None:
    """A message's content: a string, or a list of parts (``{"type": "text", "text": ...}`` or strings)."""
    if content is None or isinstance(content, (str, bytes, bytearray)):
        return _raw_text(content)
    if isinstance(content, (list, tuple)):
        parts = [_part_text(p) for p in content]
        return "".join(p for p in parts if p is not None)
    return None


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str):
        return part["text"]
    return None  # images, tool calls, ... are not code


# ---------------------------------------------------------------- thinking
_THINK_TAG = re.compile(r"<(/?)(?:think|thinking)\s*>", re.IGNORECASE)


def strip_thinking(text: str) -> str:
    """The text outside ``<think>`` blocks (see rule 1 in the module docstring)."""
    kept: list[str] = []
    depth = 0
    pos = 0
    for tag in _THINK_TAG.finditer(text):
        if depth == 0:
            kept.append(text[pos:tag.start()])
        pos = tag.end()
        if tag.group(1):           # closing tag
            if depth == 0:
                kept.clear()       # no opening tag: everything so far was thinking
            else:
                depth -= 1
        else:
            depth += 1
    if depth == 0:
        kept.append(text[pos:])
    return "".join(kept)


# ---------------------------------------------------------------- fenced blocks
_OPEN_FENCE = re.compile(r"([ \t]*)(`{3,}|~{3,})(.*)")


def find_fenced_blocks(text: str) -> list[FencedBlock]:
    """Fenced code blocks in order. A closing fence is the same character, at least as long, nothing after it.

    Repair for a common slip of small models, a closing fence glued to the last code line (``return out```"``):
    when the block as read does not parse, it ends at the first such line instead, if the code before it parses.
    """
    blocks: list[FencedBlock] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opener = _OPEN_FENCE.match(lines[i])
        # A backtick fence's info string cannot hold backticks: "```x```" is inline code, not a fence.
        if opener is None or (opener.group(2)[0] == "`" and "`" in opener.group(3)):
            i += 1
            continue
        indent, fence, info = opener.group(1), opener.group(2), opener.group(3).strip()
        closer = re.compile(r"[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*")
        end = i + 1
        while end < len(lines) and not closer.fullmatch(lines[end]):
            end += 1
        block = _block(lines[i + 1:end], indent, info, closed=end < len(lines))
        glued = _glued_close(lines, i + 1, end, indent, info, fence) if parse_python(block.code) is None else None
        if glued is not None:
            block, end = glued
        blocks.append(block)
        i = end + 1
    return blocks


def _block(body: list[str], indent: str, info: str, closed: bool) -> FencedBlock:
    code = _dedent("\n".join(_strip_indent(line, len(indent)) for line in body))
    return FencedBlock(code=code, info=info, closed=closed)


def _glued_close(lines: list[str], start: int, end: int, indent: str, info: str,
                 fence: str) -> tuple[FencedBlock, int] | None:
    """The block ended by the first line in [start, end) that ends with the fence after some code, if that
    block parses; with the index of that line."""
    for k in range(start, end):
        stripped = lines[k].rstrip()
        if stripped.endswith(fence) and stripped.rstrip(fence[0]).strip():
            body = lines[start:k] + [stripped.rstrip(fence[0])]
            block = _block(body, indent, info, closed=True)
            return (block, k) if parse_python(block.code) is not None else None
    return None


def _strip_indent(line: str, width: int) -> str:
    """Drop up to ``width`` leading whitespace characters (the fence's own indentation, e.g. in a list)."""
    n = 0
    while n < width and n < len(line) and line[n] in " \t":
        n += 1
    return line[n:]


def _dedent(code: str) -> str:
    """Remove whitespace common to every non-blank line; unlike textwrap.dedent, blank lines are kept as is."""
    lines = code.split("\n")
    margins = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    if not margins:
        return code
    common = margins[0]
    for margin in margins[1:]:
        while not margin.startswith(common):
            common = common[:-1]
    if not common:
        return code
    return "\n".join(line.removeprefix(common) for line in lines)


# ---------------------------------------------------------------- "defines ModelNew"
_MODELNEW_LINE = re.compile(r"^[ \t]*(?:class[ \t]+ModelNew\b|ModelNew[ \t]*=[^=])", re.MULTILINE)
_CODE_START = re.compile(r"^(?:import\s|from\s+\S+\s+import\s|class\s|def\s|async\s+def\s|@|#|\"\"\"|''')",
                         re.MULTILINE)


def parse_python(code: str) -> ast.Module | None:
    try:
        return parse_source(code)
    except Exception:  # noqa: BLE001 - SyntaxError, ValueError (null bytes), RecursionError/MemoryError
        return None


def _tree_defines_modelnew(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets):
                return True
    return False


def defines_modelnew(code: str) -> bool:
    """On the AST where the code parses; by a line regex (``class ModelNew``) where it does not."""
    tree = parse_python(code)
    if tree is not None:
        return _tree_defines_modelnew(tree)
    return _MODELNEW_LINE.search(code) is not None


def _parses_with_modelnew(code: str) -> bool:
    tree = parse_python(code)
    return tree is not None and _tree_defines_modelnew(tree)


# ---------------------------------------------------------------- the rules
def extract_with_reason(completion: Any) -> ExtractResult:
    """The code in a completion and the reason for the outcome. Never raises."""
    try:
        return _extract(completion)
    except Exception:  # noqa: BLE001 - a bug here must cost one sample, not a training run; tests assert none
        return ExtractResult(None, ExtractReason.EXTRACTOR_ERROR)


def extract_code(completion: Any) -> str | None:
    """The candidate source in a completion, or None when there is none (a format error). Never raises."""
    return extract_with_reason(completion).code


def _extract(completion: Any) -> ExtractResult:
    if completion is None:
        return ExtractResult(None, ExtractReason.EMPTY)
    raw = completion_text(completion)
    if raw is None:
        return ExtractResult(None, ExtractReason.BAD_INPUT)
    if not raw.strip():
        return ExtractResult(None, ExtractReason.EMPTY)
    text = strip_thinking(raw)
    if not text.strip():
        return ExtractResult(None, ExtractReason.ONLY_THINKING)

    blocks = find_fenced_blocks(text)
    chosen = _last_defining(blocks)
    if chosen is not None:
        code, joined = _with_definitions(chosen, blocks)
        return _found(code, ExtractReason.FENCED, len(blocks), truncated=not chosen.closed, joined=joined)
    if _parses_with_modelnew(text):
        return _found(_without_inert_prefix(text), ExtractReason.UNFENCED, len(blocks))
    if blocks:
        return ExtractResult(None, ExtractReason.NO_MODELNEW, n_blocks=len(blocks))
    code = _unfenced_code(text)
    if code is not None:
        return _found(code, ExtractReason.UNFENCED, 0)
    return ExtractResult(None, ExtractReason.NO_FENCED_BLOCK)


def _last_defining(blocks: Iterable[FencedBlock], depth: int = 0) -> FencedBlock | None:
    """The last block defining ModelNew. A block that does not parse but holds fences of its own (a ````markdown
    block quoting a ```python one) is searched inside, a few levels deep."""
    chosen = None
    for block in blocks:
        if parse_python(block.code) is None and depth < 3:
            inner = _last_defining(find_fenced_blocks(block.code), depth + 1)
            if inner is not None:
                chosen = inner
                continue
        if defines_modelnew(block.code):
            chosen = block
    return chosen


def _with_definitions(chosen: FencedBlock, blocks: list[FencedBlock]) -> tuple[str, int]:
    """The chosen block's code, after the earlier blocks that define names it uses but binds nowhere (an answer
    in parts: the kernel in one block, then ``ModelNew`` in another; the thirty-second red team's ``c6``), each
    the nearest earlier one defining a name still missing, in the order they came; and how many were joined.
    Only blocks that parse, before the chosen one at its own level; a complete block is returned as it is."""
    tree = parse_python(chosen.code)
    earlier = blocks[: next((i for i, b in enumerate(blocks) if b is chosen), 0)]
    if tree is None or not earlier:
        return chosen.code, 0
    missing, taken = _unbound(tree), []
    for index in range(len(earlier) - 1, -1, -1):
        if not missing:
            break
        found = parse_python(earlier[index].code)
        names = _top_level_names(found) if found is not None else set()
        if names & missing:
            taken.append(index)
            missing = (missing - names) | _unbound(found)
    if not taken:
        return chosen.code, 0
    parts = [earlier[i].code.rstrip("\n") for i in sorted(taken)]
    return "\n\n\n".join([*parts, chosen.code]), len(taken)


def _top_level_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level: definitions, assignments, imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _unbound(tree: ast.Module) -> set[str]:
    """The names a module reads that it binds nowhere (in no scope: a conservative reading), builtins aside."""
    import builtins

    read, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound - set(dir(builtins))


def _without_inert_prefix(text: str) -> str:
    """The text from its first code-looking line when what comes before adds nothing to the program: the same
    AST either way (prose that Python happens to accept, such as a lone ``\\`` line, a line continuation)."""
    start = _CODE_START.search(text)
    if start is None or start.start() == 0 or not text[: start.start()].strip():
        return text
    rest = text[start.start():]
    whole, tail = parse_python(text), parse_python(rest)
    if whole is not None and tail is not None and ast.dump(whole) == ast.dump(tail):
        return rest
    return text


def _unfenced_code(text: str, max_starts: int = 50) -> str | None:
    """Unfenced code after some prose ("Here is my solution:"), from a code-looking line to the end.

    The first start from which the rest parses and defines ModelNew; failing that, when the rest has a
    ``class ModelNew`` line, the first start (the code is broken: let the verifier say where).
    """
    starts = [m.start() for _, m in zip(range(max_starts), _CODE_START.finditer(text))]
    for start in starts:
        if _parses_with_modelnew(text[start:]):
            return text[start:]
    if starts and _MODELNEW_LINE.search(text, starts[0]):
        return text[starts[0]:]
    return None


def _found(code: str, reason: ExtractReason, n_blocks: int, truncated: bool = False, joined: int = 0) -> ExtractResult:
    code = normalize_code(code)
    return ExtractResult(code, reason, n_blocks=n_blocks, truncated=truncated,
                         parses=parse_python(code) is not None, joined=joined)


def normalize_code(code: str) -> str:
    """Leading blank lines and trailing whitespace removed, one final newline. Idempotent."""
    lines = code.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip() + "\n"
