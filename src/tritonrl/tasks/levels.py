"""Difficulty levels from code: how many compute ops ``Model.forward`` performs, read from the AST.

    from tritonrl.tasks.levels import classify_level
    classify_level(open("task.py").read())   # -> 1, 2 or 3

1: a single compute op, possibly with trivial reshapes (or one scaled add, which is one BLAS-1 op).
2: a fusion chain of several ops.
3: harder: loops or containers of layers in forward, recurrent/attention blocks, custom sub-modules,
   or a long chain of ops.

The count follows what forward executes, not what the task is called: torch / ``F`` calls, calls of ``nn``
sub-modules built in ``__init__``, tensor methods, and arithmetic with a tensor operand. Methods of ``Model``
and module-level helpers that forward calls are followed. Reshapes, shape queries and tensor construction are
free. KernelBench and bundled tasks keep their directory's level; this labels tasks that have none (KernelBook).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tritonrl.util.astlock import parse_source

# Data movement and queries: they cost no arithmetic, so they never make a task harder.
TRIVIAL_CALLS = frozenset({
    "view", "reshape", "permute", "transpose", "t", "contiguous", "unsqueeze", "squeeze", "flatten",
    "unflatten", "expand", "expand_as", "view_as", "reshape_as", "size", "dim", "numel", "to", "float",
    "double", "half", "bfloat16", "type", "type_as", "clone", "detach", "cpu", "cuda", "chunk", "split",
    "narrow", "select", "cat", "concat", "stack", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
    "empty_like", "full_like", "arange", "tensor", "as_tensor", "tril", "triu", "diag", "movedim", "item",
    "new_zeros", "new_ones", "new_empty", "new_full", "is_contiguous", "repeat", "tile", "len", "int",
    "range", "super", "isinstance", "print", "tuple", "list", "getattr",
})
# Ops that read many inputs per output (matmul-like, reductions, norms, pooling); the rest are elementwise.
MATMUL_OPS = frozenset({
    "matmul", "mm", "bmm", "einsum", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "addmm", "baddbmm", "bilinear", "tensordot", "mv",
    "scaled_dot_product_attention", "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Bilinear",
})
REDUCTION_WORDS = ("sum", "mean", "max", "min", "prod", "softmax", "logsumexp", "norm", "var", "std", "cum",
                   "arg", "pool", "Pool", "Norm", "loss", "Loss", "entropy", "Softmax", "all", "any", "topk",
                   "sort", "median", "mode", "kl_div", "cosine_similarity", "pairwise_distance")
# nn sub-modules that are whole blocks by themselves: forward through one is already "harder".
BLOCK_MODULES = frozenset({
    "LSTM", "GRU", "RNN", "MultiheadAttention", "Transformer", "TransformerEncoder", "TransformerDecoder",
    "TransformerEncoderLayer", "TransformerDecoderLayer", "Sequential", "ModuleList", "ModuleDict",
})
LONG_CHAIN = 12


@dataclass
class OpCount:
    """What forward does: counts by kind, plus the structural facts that make a task level 3."""

    kinds: Counter
    loops: int = 0
    blocks: int = 0

    @property
    def total(self) -> int:
        return sum(self.kinds.values())


def classify_level(source: str) -> int:
    """1, 2 or 3 for a task module's source (see the module docstring). Unparsable source counts as 3."""
    try:
        ops = count_ops(source)
    except SyntaxError:
        return 3
    if ops.loops or ops.blocks or ops.total > LONG_CHAIN:
        return 3
    if ops.total <= 1:
        return 1
    if ops.total == 2 and set(ops.kinds) == {"elementwise"}:
        return 1
    return 2


def level_distribution(tasks: Iterable) -> dict[int, int]:
    """How many tasks sit at each level, levels sorted."""
    counts = Counter(task.level for task in tasks)
    return dict(sorted(counts.items()))


def count_ops(source: str) -> OpCount:
    """Count the compute ops ``Model.forward`` performs (following helpers); see the module docstring."""
    tree = parse_source(source)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    model = classes.get("Model") or classes.get("ModelNew") or next(iter(classes.values()), None)
    while model is not None and not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        # an adapter subclass (KernelBook rows): forward lives in a base class of this module
        bases = [b.id for b in model.bases if isinstance(b, ast.Name) and b.id in classes and b.id != model.name]
        model = classes[bases[0]] if bases else None
    ops = OpCount(Counter())
    if model is None:
        return ops
    counter = _ForwardCounter(model, classes, functions, ops)
    counter.count_method("forward")
    return ops


class _ForwardCounter:
    """Walks forward (and what it calls) once, adding to an ``OpCount``."""

    def __init__(self, cls: ast.ClassDef, classes: dict, functions: dict, ops: OpCount):
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        self.classes, self.functions, self.ops = classes, functions, ops
        self.submodules = _submodule_types(self.methods.get("__init__"))
        self.visited: set[str] = set()

    def count_method(self, name: str) -> None:
        fn = self.methods.get(name)
        if fn is None or name in self.visited:
            return
        self.visited.add(name)
        self._count_body(fn)

    def _count_body(self, fn: ast.FunctionDef) -> None:
        tensors = {a.arg for a in fn.args.args[1 if fn.args.args and fn.args.args[0].arg == "self" else 0:]}
        tensors |= {a.arg for a in fn.args.kwonlyargs} | ({fn.args.vararg.arg} if fn.args.vararg else set())
        for node in ast.walk(fn):
            if isinstance(node, (ast.For, ast.While, ast.comprehension)):
                self.ops.loops += 1
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                if not _is_shape_query(node.value) and any(
                        isinstance(n, ast.Name) and n.id in tensors or isinstance(n, ast.Call)
                        for n in ast.walk(node.value)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tensors |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                self._count_call(node, tensors)
            elif isinstance(node, (ast.BinOp, ast.AugAssign)):
                sides = [node.left, node.right] if isinstance(node, ast.BinOp) else [node.target, node.value]
                if any(_is_tensorish(side, tensors) for side in sides):
                    matmul = isinstance(node.op, ast.MatMult)
                    self.ops.kinds["matmul" if matmul else "elementwise"] += 1
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                if _is_tensorish(node.operand, tensors):
                    self.ops.kinds["elementwise"] += 1

    def _count_call(self, call: ast.Call, tensors: set[str]) -> None:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in self.functions and func.id not in self.visited:
                self.visited.add(func.id)
                self._count_body(self.functions[func.id])
            elif func.id not in TRIVIAL_CALLS and func.id not in self.classes:
                self.ops.kinds[_op_kind(func.id)] += 1
            return
        if not isinstance(func, ast.Attribute) or func.attr in TRIVIAL_CALLS:
            return
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            self._count_self_call(func.attr)
        elif _dotted_root(owner) in ("torch", "F", "nn", "math") or _is_tensorish(owner, tensors):
            if _dotted_root(owner) != "math":
                self.ops.kinds[_op_kind(func.attr)] += 1

    def _count_self_call(self, attr: str) -> None:
        if attr in self.methods:
            self.count_method(attr)
            return
        kind = self.submodules.get(attr)
        if kind is None:
            return
        if kind in BLOCK_MODULES or kind in self.classes:
            self.ops.blocks += 1
        else:
            self.ops.kinds[_op_kind(kind)] += 1


def _op_kind(name: str) -> str:
    if name in MATMUL_OPS:
        return "matmul"
    if any(word in name for word in REDUCTION_WORDS):
        return "reduction"
    return "elementwise"


def _submodule_types(init: ast.FunctionDef | None) -> dict[str, str]:
    """``self.conv = nn.Conv2d(...)`` in __init__ -> {"conv": "Conv2d"}; attributes holding plain values are left out."""
    found: dict[str, str] = {}
    if init is None:
        return found
    for node in ast.walk(init):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Call):
            continue
        func = node.value.func
        type_name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if not type_name or type_name in ("Parameter", "tensor", "randn", "zeros", "ones", "rand", "empty"):
            continue
        for target in node.targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                found[target.attr] = type_name
    return found


def _is_shape_query(node: ast.AST) -> bool:
    """``x.size()``, ``x.shape`` or ``x.shape[1]``: plain ints, not tensors."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("size", "dim", "numel")
    return isinstance(node, ast.Attribute) and node.attr == "shape"


def _dotted_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_tensorish(node: ast.AST, tensors: set[str]) -> bool:
    """Whether an expression (probably) holds a tensor: a tensor name, a call result, or arithmetic on them."""
    if isinstance(node, ast.Name):
        return node.id in tensors
    if isinstance(node, ast.Call):
        return not (isinstance(node.func, ast.Attribute) and node.func.attr in ("size", "dim", "numel", "item"))
    if isinstance(node, ast.Subscript):
        return _is_tensorish(node.value, tensors)
    if isinstance(node, ast.BinOp):
        return _is_tensorish(node.left, tensors) or _is_tensorish(node.right, tensors)
    if isinstance(node, ast.UnaryOp):
        return _is_tensorish(node.operand, tensors)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return True  # a parameter or buffer; plain-number attributes multiply a tensor anyway
    return False
