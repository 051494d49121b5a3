"""KernelBook (PyTorch -> Triton pairs from Inductor, hub id ``GPUMODE/KernelBook``) as filtered tasks.

    from tritonrl.tasks.kernelbook import load_kernelbook
    tasks, report = load_kernelbook("GPUMODE/KernelBook", kernelbench_dir="~/KernelBench")
    print(report)        # rows read, and how many each filter dropped

Each row's ``python_code`` (a module class named by ``entry_point``, ``get_inputs``, ``get_init_inputs``
returning ``[args, kwargs]``) becomes a KernelBench-format task: an adapter appended to the text defines
``Model`` (taking no arguments) and a KernelBench ``get_init_inputs``. ``triton_code`` becomes the solution.
Filters, in order: unparsable (either side, or no entry class), not pure Triton (``extern_kernels`` or torch
compute ops outside the Triton kernels: cuBLAS/cuDNN calls are not Triton targets), duplicates (hash of the
normalized source: AST dump without docstrings, comments, whitespace), and contamination with KernelBench
(same normalized ``forward`` or a high token n-gram overlap with a task's ``Model`` class).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import tokenize
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tritonrl.errors import TaskError
from tritonrl.tasks.levels import classify_level
from tritonrl.tasks.model import KernelTask
from tritonrl.util.astlock import parse_source

HUB_ID = "GPUMODE/KernelBook"
NGRAM = 6
CONTAINMENT_THRESHOLD = 0.7  # share of the smaller class's token 6-grams found in the other
# torch calls Inductor's wrapper code makes that allocate, view or guard, but compute nothing.
ALLOWED_TORCH_CALLS = frozenset({
    "empty", "empty_strided", "zeros", "ones", "full", "arange", "device", "as_strided", "empty_like",
    "zeros_like", "ones_like", "tensor", "is_tensor", "manual_seed", "get_device", "set_device", "synchronize",
    "current_device", "current_stream", "Size", "no_grad", "float32", "dtype",
})


@dataclass
class FilterReport:
    """How many rows each filter dropped, in filter order."""

    rows: int = 0
    unparsable: int = 0
    not_pure_triton: int = 0
    duplicate: int = 0
    contaminated: int = 0
    kept: int = 0
    kernelbench: str | None = None  # the clone rows were checked against; None: overlap not checked

    def table(self) -> str:
        lines = [("rows read", self.rows), ("unparsable", self.unparsable),
                 ("not pure Triton", self.not_pure_triton), ("duplicate", self.duplicate),
                 ("KernelBench overlap", overlap_cell(self.contaminated, self.kernelbench)), ("kept", self.kept)]
        return "\n".join(f"{label:<20} {count:>7}" for label, count in lines)

    __str__ = table


def overlap_cell(count: int, kernelbench: str | None) -> int | str:
    """The "KernelBench overlap" count, or that nothing was checked (no clone given): 0 would claim a check."""
    return count if kernelbench else "not checked (no KernelBench clone given)"


def load_kernelbook(path_or_hub_id: str = HUB_ID, kernelbench_dir: str | Path | None = None,
                    limit: int | None = None) -> tuple[list[KernelTask], FilterReport]:
    """Filtered KernelBook tasks and the filter report; ``limit`` caps the rows read."""
    reference = _KernelBenchIndex(kernelbench_dir) if kernelbench_dir else None
    report = FilterReport(kernelbench=str(kernelbench_dir) if kernelbench_dir else None)
    seen: set[str] = set()
    tasks = []
    for index, row in enumerate(_rows(path_or_hub_id)):
        if limit is not None and index >= limit:
            break
        report.rows += 1
        task = _row_task(row, index, report, seen, reference)
        if task is not None:
            tasks.append(task)
    report.kept = len(tasks)
    return tasks, report


def _row_task(row: dict, index: int, report: FilterReport, seen: set[str],
              reference: _KernelBenchIndex | None) -> KernelTask | None:
    python_code, triton_code = row.get("python_code") or "", row.get("triton_code") or ""
    entry = row.get("entry_point") or ""
    try:
        tree = parse_source(python_code)
        triton_tree = parse_source(triton_code)
    except SyntaxError:
        report.unparsable += 1
        return None
    entry_class = _find_class(tree, entry)
    if entry_class is None or not _defines(tree, "get_inputs"):
        report.unparsable += 1
        return None
    if not is_pure_triton(triton_tree):
        report.not_pure_triton += 1
        return None
    digest = normalized_hash(tree)
    if digest in seen:
        report.duplicate += 1
        return None
    seen.add(digest)
    if reference is not None and reference.matches(entry_class):
        report.contaminated += 1
        return None
    source = python_code.rstrip() + "\n" + _task_adapter(entry, tree)
    meta = {k: row.get(k) for k in ("uuid", "repo_name", "module_name", "synthetic") if k in row}
    meta["row"] = index
    return KernelTask(name=f"kb_{row.get('uuid', index)}_{entry}", level=classify_level(source), source=source,
                      origin="kernelbook", solution=triton_code.rstrip() + "\n" + _solution_adapter(entry, tree),
                      meta=meta)


# ---------------------------------------------------------------- reading rows
def _rows(path_or_hub_id: str | Path) -> Iterator[dict]:
    path = Path(str(path_or_hub_id)).expanduser()
    if path.suffix == ".jsonl":
        if not path.is_file():
            raise TaskError(f"no such KernelBook file: {path}")
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise TaskError(f"{path}:{number}: not JSON ({exc.msg})") from None
        return
    try:
        import datasets  # the `train` extra; only needed for parquet files and the hub
    except ImportError:
        raise TaskError("reading KernelBook from parquet or the hub needs `datasets` (pip install tritonrl[train])") from None
    if path.suffix == ".parquet":
        if not path.is_file():
            raise TaskError(f"no such KernelBook file: {path}")
        yield from datasets.load_dataset("parquet", data_files=str(path), split="train")
    else:
        yield from datasets.load_dataset(str(path_or_hub_id), split="train")


# ---------------------------------------------------------------- filters
def is_pure_triton(tree: ast.Module) -> bool:
    """False if the wrapper calls ``extern_kernels``, aten ops, or torch compute functions (outside @triton.jit)."""
    jit_nodes = {id(n) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) and _is_jit(fn)
                 for n in ast.walk(fn)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in jit_nodes:
            continue
        parts = _dotted(node.func)
        if not parts:
            continue
        if parts[0] == "extern_kernels" or "aten" in parts:
            return False
        if parts[0] in ("torch", "F") and len(parts) >= 2 and parts[1] not in ("_C", "cuda", "_inductor", "_dynamo"):
            op = parts[-1]
            if not op.startswith("_") and op not in ALLOWED_TORCH_CALLS:
                return False
    return True


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in (_dotted(d.func if isinstance(d, ast.Call) else d) or [""])[-1] for d in fn.decorator_list)


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def normalized_hash(node: ast.AST) -> str:
    """Hash of the AST without docstrings (comments and whitespace never reach the AST)."""
    return hashlib.sha256(ast.dump(_strip_docstrings(node), annotate_fields=False).encode()).hexdigest()


def _strip_docstrings(node: ast.AST) -> ast.AST:
    node = parse_source(ast.unparse(node))  # a fresh copy: the caller's tree is left alone
    for owner in ast.walk(node):
        body = getattr(owner, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            owner.body = body[1:] or [ast.Pass()]
    return node


class _KernelBenchIndex:
    """KernelBench ``Model`` classes, for decontamination: forward hashes and token n-grams."""

    def __init__(self, kernelbench_dir: str | Path):
        from tritonrl.tasks.sources import load_kernelbench

        self.forward_hashes: set[str] = set()
        self.grams: list[set] = []
        self.index: dict[tuple, list[int]] = defaultdict(list)
        for task in load_kernelbench(kernelbench_dir):
            model = _find_class(parse_source(task.source), "Model")
            if model is None:
                continue
            forward = _method(model, "forward")
            if forward is not None:
                self.forward_hashes.add(_forward_hash(forward))
            grams = _ngrams(_class_tokens(model))
            for gram in grams:
                self.index[gram].append(len(self.grams))
            self.grams.append(grams)

    def matches(self, cls: ast.ClassDef) -> bool:
        forward = _method(cls, "forward")
        if forward is not None and _forward_hash(forward) in self.forward_hashes:
            return True
        grams = _ngrams(_class_tokens(cls))
        shared: dict[int, int] = defaultdict(int)
        for gram in grams:
            for task_id in self.index.get(gram, ()):
                shared[task_id] += 1
        return any(count / max(1, min(len(grams), len(self.grams[t]))) >= CONTAINMENT_THRESHOLD
                   for t, count in shared.items())


def _forward_hash(forward: ast.FunctionDef) -> str:
    body = ast.Module(body=forward.body, type_ignores=[])
    return normalized_hash(body)


def _class_tokens(cls: ast.ClassDef) -> list[str]:
    """Names, operators and numbers of a class, its own name replaced, docstrings and comments dropped."""
    text = ast.unparse(_strip_docstrings(ast.Module(body=[cls], type_ignores=[])))
    tokens = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
            tokens.append("CLS" if tok.string == cls.name else tok.string)
    return tokens


def _ngrams(tokens: list[str]) -> set[tuple]:
    return {tuple(tokens[i:i + NGRAM]) for i in range(max(1, len(tokens) - NGRAM + 1))}


# ---------------------------------------------------------------- adapters to the KernelBench format
def _task_adapter(entry: str, tree: ast.Module) -> str:
    args, kwargs = _init_literal(tree)
    init = f"*{args!r}, **{kwargs!r}" if args is not None else "*_kernelbook_init()[0], **_kernelbook_init()[1]"
    return (f"\n\n# tritonrl: KernelBench-format adapter for this KernelBook row\n"
            f"_kernelbook_init = get_init_inputs\n\n\n"
            f"class Model({entry}):\n    def __init__(self):\n        super().__init__({init})\n\n\n"
            f"def get_init_inputs():\n    return []\n")


def _solution_adapter(entry: str, tree: ast.Module) -> str:
    args, kwargs = _init_literal(tree)
    if args is None:
        return ""
    return (f"\n\n# tritonrl: KernelBench-format adapter for this KernelBook row\n"
            f"class ModelNew({entry}New):\n    def __init__(self):\n        super().__init__(*{args!r}, **{kwargs!r})\n")


def _init_literal(tree: ast.Module) -> tuple[list | None, dict | None]:
    """KernelBook's ``get_init_inputs`` returns ``[args, kwargs]``; their literal values if it is that simple."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_init_inputs":
            returns = [n for n in node.body if isinstance(n, ast.Return)]
            try:
                value = ast.literal_eval(returns[0].value) if len(node.body) == 1 and returns else None
            except ValueError:
                value = None
            if isinstance(value, list) and len(value) == 2 and isinstance(value[1], dict):
                return list(value[0]), value[1]
    return None, None


def _find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _defines(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)
