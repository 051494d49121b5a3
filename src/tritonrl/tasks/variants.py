"""Shape variants of a task: the same program with its module-level int constants rewritten.

    from tritonrl.tasks.variants import tiny_variant, alt_variants
    tiny = tiny_variant(task)            # variant "tiny": runs on CPU in well under a second
    alts = alt_variants(task, n=2)       # "alt1": every size 2^j + 1 (an edge); "alt2": 2^j, else nearby sizes
    small = reduced_variant(task, fits)  # variant "reduced": the mildest uniform shrink whose source ``fits``
    wide = wide_variant(task, ceiling)   # "wide": 3 rows, features at the real scale (else 4x + 1); a GEMM deep
    timing = timing_variant(task)        # variant "timing": a bundled task at KernelBench scale (GPU), or None
    task_cost(task.source)               # TaskCost(max_numel, flops), measured on the meta device
    task_traffic(task.source)            # TaskTraffic: bytes moved, FLOPs, estimated H100 ms (meta device)
    tiny.meta["changes"]                 # {"batch_size": (128, 2), ...}

Each constant is classified by its name and use (batch / spatial / feature sizes, divisors such as groups and
heads, and fixed structure such as kernel size, stride, padding, dilation, dim indices and small values). Two kinds
describe a model's depth, and only where ``get_init_inputs`` hands them to the model: a list of layer widths
(``hidden_layer_sizes = [1024] * 16``, ``layer_sizes = [16384, 16384]``: kind "layers", its widths sizes like
features, its length a layer count) and a layer count (``num_layers = 6``: kind "count"). The tiny variant keeps
``TINY_LAYERS`` layers of such a model (a reduced one too, as a last resort); every other variant keeps the depth
as written. A block-count list (ResNet's ``layers = [3, 4, 23, 3]``) or a width list tied to another constant
(RegNet's ``block_widths`` beside ``stages``) is not read as either: it stays as written.
Candidates are decided by trying: the rewritten source is executed in a fresh namespace, ``Model`` is built from
``get_init_inputs()`` and run on ``get_inputs()``; only variants that run and return a non-empty tensor are kept.
Sizes written equal (even under different kinds, e.g. ``batch_size`` and ``input_shape = (batch_size_value,)``) can
be kept equal when shrinking alone breaks a broadcast. Tiny candidates run for real, smallest first, falling back to
milder shrinking, and only when their inputs are small (a large original is never run); alternative shapes are checked
on the ``meta`` device (shapes only, no arithmetic), or for real when an op has no meta kernel and the inputs
are small. Reduced variants (for a machine that cannot run the original sizes, e.g. the CPU interpreter)
divide every size by one factor, mildest first, keeping ratios and group multiples, and never below
``REDUCE_FLOOR`` where that is enough. Only the constants' text changes; the rest of the source is kept as written. Results are cached
per task key.

Timing variants are data, not search: the bundled suite's sizes are made for the CPU interpreter (l1_relu is 16x1024),
where a GPU would time kernel launches, so ``bundled/timing_shapes.json`` gives each bundled task the constants it
takes on a GPU for full trials and timing (KernelBench scale: >= ~0.5 ms on an H100, or >= 64 MiB moved when
memory-bound; ``TaskTraffic.meets_target``), with a note where a reference solution's design bounds a size.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import math
import random
import re
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tritonrl.errors import TaskError
from tritonrl.tasks.model import KernelTask
from tritonrl.util.astlock import compile_source, parse_source

STRUCTURAL_WORDS = ("kernel", "stride", "pad", "dilation", "pool", "scale_factor", "layer", "axis", "output_size",
                    "topk", "top_k", "window", "order", "bits", "step", "stage", "block")
SPATIAL_WORDS = ("height", "width", "depth", "length", "seq", "_len", "spatial", "time", "frame", "token")
SPATIAL_NAMES = frozenset({"h", "w", "d", "l", "t", "H", "W", "D", "L", "T"})
SIZE_WORDS = ("size", "dim", "channel", "feature", "hidden", "embed", "batch", "num_", "n_")
# Shrinking schedule for the tiny variant, smallest first: (batch cap, spatial cap, feature cap, shrink divisors).
TINY_TIERS = ((2, 8, 8, True), (2, 12, 16, True), (2, 16, 32, False), (4, 32, 64, False))
UNIFORM_DIVISORS = (64, 32, 16, 8, 4, 2)  # last resort: divide every size by f, keeping all ratios
ALT_SPREAD = 0.25
SIZE_KINDS = ("batch", "spatial", "feature", "shape", "layers")  # what variants resize ("layers": each width)
ALT_KINDS = SIZE_KINDS
WIDTH_KINDS = ("feature", "layers")  # sizes kept multiples of a task's groups/heads
LAYER_WIDTH_WORDS = ("size", "dim", "width", "feature", "unit", "channel")
LAYER_COUNT_NAME = re.compile(r"(num|n)_?(hidden_)?layers?")
TINY_LAYERS = 2  # layers a tiny variant keeps of a deep model: the first, the last and what joins them
MAX_REPEAT = 4096  # ``[w] * n`` is read as a list of sizes up to this length
MAX_REAL_ALT_NUMEL = 1 << 22
MAX_TINY_NUMEL = 1 << 22  # inputs larger than this are never run for real while looking for a tiny variant
TINY_MAX_S = 1.0
REDUCE_FACTORS = tuple(2**k for k in range(1, 13))  # reduced variant: every size divided by one of these
REDUCE_FLOOR = 16  # a first pass keeps sizes at least this (or as written, if smaller): a batch of 1 tests little

_MAKING: dict[tuple[int, Any], threading.RLock] = {}  # one lock per (cache, key) being made (``_once``)
_MAKING_LOCK = threading.Lock()
_TINY_CACHE: dict[tuple[str, bool], KernelTask | TaskError] = {}
_ALT_CACHE: dict[tuple[str, int, int], list[KernelTask]] = {}


@dataclass(frozen=True)
class Constant:
    """One module-level assignment of an int (or a tuple of ints), with its kind and source position."""

    name: str
    value: int | tuple[int, ...]
    kind: str  # "batch", "spatial", "feature", "shape" (tuple of sizes), "layers" (layer widths), "count" (layers),
    #            "divisor" or "fixed"
    node: ast.expr


@dataclass
class RunResult:
    ok: bool
    seconds: float = 0.0
    error: str = ""


def tiny_variant(task: KernelTask, same_divisibility: bool = False) -> KernelTask:
    """Variant "tiny"; raises ``TaskError`` if no shrunk (or original) version runs.

    ``same_divisibility`` (for a GPU): every size that is a multiple of 16 in the task stays one (rounded up),
    so the tiny trial's integer arguments and strides fall in the classes Triton compiles a kernel for
    (divisible by 16 or not, equal to 1 or not) as the full trials' do, and the kernel compiled for the tiny
    trial serves them too: one compilation per candidate instead of two (seconds each at KernelBench scale)."""
    def make() -> KernelTask | TaskError:
        try:
            return _make_tiny(task, same_divisibility)
        except TaskError as exc:
            return exc

    cached = _once(_TINY_CACHE, (task.key, same_divisibility), make)
    if isinstance(cached, TaskError):
        raise cached
    return cached


def alt_variants(task: KernelTask, n: int = 2, seed: int = 0) -> list[KernelTask]:
    """Up to ``n`` variants "alt1".. with similar-size, different shapes; empty if none can be made."""
    return list(_once(_ALT_CACHE, (task.key, n, seed), lambda: _make_alts(task, n, seed)))


def _once(cache: dict, key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made by one thread: a batch plans its items in threads, and 36 of them making the same
    task's variants at once (the first meta run imports much of torch) kept a GPU batch's forks waiting 5 s."""
    if key in cache:
        return cache[key]
    with _MAKING_LOCK:
        lock = _MAKING.setdefault((id(cache), key), threading.RLock())
    with lock:  # other keys are made side by side
        if key not in cache:
            cache[key] = make()
        return cache[key]


def warm_meta() -> None:
    """One small forward on the meta device, so torch's lazily imported machinery for it (decompositions, refs:
    2 to 5 s on a GPU machine's first run) is loaded: ``Verifier.start`` calls it in the background while the zygote
    starts, instead of the batch's first plans waiting for it."""
    import torch

    with torch.device("meta"):
        x = torch.nn.Linear(8, 8)(torch.empty(4, 8))
        torch.nn.functional.gelu(x * 2 - 1).relu().sigmoid().sum()


def find_constants(source: str) -> list[Constant]:
    """Module-level ``name = <int or tuple of ints>`` assignments, classified (see the module docstring)."""
    tree = parse_source(source)
    in_inputs = _names_used_in(tree, "get_inputs")
    in_init = _names_used_in(tree, "get_init_inputs")
    divisor_names = _divisor_names(tree)
    assigned = list(_assignments(tree))
    names = {name for name, _ in assigned}
    found = []
    for name, value_node in assigned:
        value = _int_value(value_node)
        if value is not None:
            kind = _depth_kind(name, value, name in in_init) or \
                _classify(name, value, name in in_inputs, name in divisor_names)
            if kind == "fixed" and name == "output_size" and "input_size" in names and isinstance(value, int) \
                    and value > 4:
                kind = "feature"  # beside an input_size, a layer's width (an MLP, an RNN), not a pooling's output
            found.append(Constant(name, value, kind, value_node))
    return found


def _depth_kind(name: str, value: int | tuple, used_in_init: bool) -> str | None:
    """"layers" for a list of layer widths, "count" for a layer count, both only when ``get_init_inputs`` hands
    them to the model (the candidate's ``ModelNew`` is then built with the same, smaller depth); else None."""
    if not used_in_init:
        return None
    low = name.lower()
    if isinstance(value, tuple):
        widths = ("layer" in low or "hidden" in low) and any(w in low for w in LAYER_WIDTH_WORDS)
        return "layers" if widths and min(value, default=0) > 0 else None
    return "count" if LAYER_COUNT_NAME.fullmatch(low) and value > TINY_LAYERS else None


def _assignments(tree: ast.Module):
    """(name, value node) for ``a = 1``, ``a: int = 1``, ``h = w = 1`` (named h) and ``d, h = 1, 2`` (element-wise)."""
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names:
            # ``height = width = 64``: one value, named by its most telling target
            yield max(names, key=lambda n: any(w in n.lower() for w in SPATIAL_WORDS + SIZE_WORDS)), value
        for target in targets:
            if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                for element, element_value in zip(target.elts, value.elts):
                    if isinstance(element, ast.Name):
                        yield element.id, element_value


def _classify(name: str, value: int | tuple, used_in_inputs: bool, is_divisor: bool) -> str:
    low = name.lower()
    if any(word in low for word in STRUCTURAL_WORDS):
        return "fixed"
    if isinstance(value, tuple):
        return "shape" if ("shape" in low or "size" in low or "dims" in low) and min(value, default=0) > 0 else "fixed"
    if is_divisor or (("group" in low or "head" in low) and not any(w in low for w in ("dim", "size", "channel"))):
        return "divisor"
    if value <= 4:
        return "fixed"  # dim indices, 3 input channels, ...: nothing to gain, much to break
    if "batch" in low:
        return "batch"
    if name in SPATIAL_NAMES or any(word in low for word in SPATIAL_WORDS):
        return "spatial"
    if not used_in_inputs and value <= 16 and not any(word in low for word in SIZE_WORDS):
        return "fixed"  # an unnamed small hyper-parameter of the model, not a tensor size
    return "feature"


def _divisor_names(tree: ast.Module) -> set[str]:
    """Names passed as ``groups=`` / ``num_groups=`` / ``num_heads=`` anywhere, or as GroupNorm's first argument."""
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg in ("groups", "num_groups", "num_heads", "n_head", "nhead") and isinstance(kw.value, ast.Name):
                names.add(kw.value.id)
    return names


def _names_used_in(tree: ast.Module, function: str) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return set()


def _int_value(node: ast.expr) -> int | tuple[int, ...] | None:
    """The int a constant expression evaluates to (literals and + - * // **), or a tuple/list of such ints."""
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_int_value(e) for e in node.elts]
        return tuple(items) if items and all(isinstance(i, int) for i in items) else None
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # ``[1024] * 16``: a list of sizes
        items, times = (node.left, node.right) if isinstance(node.left, (ast.List, ast.Tuple)) else (node.right, node.left)
        if isinstance(items, (ast.List, ast.Tuple)):
            unit, count = _int_value(items), _int_value(times)
            ok = isinstance(unit, tuple) and isinstance(count, int) and 0 < count * len(unit) <= MAX_REPEAT
            return unit * count if ok else None
    if isinstance(node, ast.BinOp):
        left, right = _int_value(node.left), _int_value(node.right)
        if not (isinstance(left, int) and isinstance(right, int)):
            return None
        ops = {ast.Add: lambda: left + right, ast.Sub: lambda: left - right, ast.Mult: lambda: left * right,
               ast.FloorDiv: lambda: left // right if right else None,
               ast.Pow: lambda: left**right if 0 <= right <= 64 else None}
        op = ops.get(type(node.op))
        return op() if op else None
    return None


def rewrite_constants(source: str, constants: list[Constant], new_values: dict[int, object]) -> str:
    """Replace the text of each constant whose index is in ``new_values``; everything else is kept verbatim."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    data = source.encode()
    edits = []
    for index, value in new_values.items():
        node = constants[index].node
        start = offsets[node.lineno - 1] + node.col_offset
        end = offsets[node.end_lineno - 1] + node.end_col_offset
        edits.append((start, end, _literal(value, node)))
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text.encode() + data[end:]
    return data.decode()


def _literal(value: object, node: ast.expr) -> str:
    if not isinstance(value, tuple):
        return str(value)
    if isinstance(node, ast.BinOp):  # written ``[w] * n``: so again while every item is equal, else spelled out
        is_list = isinstance(node.left, ast.List) or isinstance(node.right, ast.List)
        if len(set(value)) == 1:
            return f"[{value[0]}] * {len(value)}" if is_list else f"({value[0]},) * {len(value)}"
        node = ast.List() if is_list else ast.Tuple()
    inner = ", ".join(str(v) for v in value)
    if isinstance(node, ast.List):
        return f"[{inner}]"
    return f"({inner},)" if len(value) == 1 else f"({inner})"


# ---------------------------------------------------------------- running a candidate
def run_source(source: str, meta: bool = False) -> RunResult:
    """Execute a task source fresh, build ``Model``, run forward once under no_grad; ok if it returns data."""
    import torch

    namespace: dict = {"__name__": "tritonrl_task_variant"}
    device = torch.device("meta") if meta else contextlib.nullcontext()
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings(), device, \
                _cuda_redirect("meta" if meta else "cpu"):
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            exec(compile_source(source, "<task variant>"), namespace)  # noqa: S102 -- running the task is the point
            model = namespace["Model"](*namespace["get_init_inputs"]())
            inputs = namespace["get_inputs"]()
            start = time.perf_counter()
            output = model(*inputs)
            seconds = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 -- any failure of the candidate means "does not run"; the reason is kept
        return RunResult(False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
    tensors = [t for t in _flatten(output) if isinstance(t, torch.Tensor)]
    if not tensors or all(t.numel() == 0 for t in tensors):
        return RunResult(False, seconds, "forward returned no tensor data")
    return RunResult(True, seconds)


@contextlib.contextmanager
def _cuda_redirect(target: str):
    """Where CUDA is missing (or shapes only are wanted), tensors a task asks to put on "cuda" go to ``target``.

    Some task files create their inputs with ``device="cuda"`` or call ``.cuda()``; the shapes are what matter here.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    if target == "cpu" and torch.cuda.is_available():
        yield
        return

    class Redirect(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in (torch.Tensor.cuda, torch.Tensor.cpu):
                return args[0].to(target)
            if "device" in kwargs and "cuda" in str(kwargs["device"]):
                kwargs["device"] = target
            if func is torch.Tensor.to:
                args = tuple(target if "cuda" in str(a) and isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    with Redirect():
        yield


def _flatten(output: object) -> list:
    if isinstance(output, (list, tuple)):
        return [item for sub in output for item in _flatten(sub)]
    return [output]


def _meta_input_sizes(source: str) -> list[int] | None:
    """Elements of each tensor ``get_inputs()`` makes, on the meta device (no memory), or None if that fails."""
    import torch

    namespace: dict = {"__name__": "tritonrl_task_variant"}
    try:
        with torch.random.fork_rng(devices=[]), torch.device("meta"), _cuda_redirect("meta"):
            exec(compile_source(source, "<task variant>"), namespace)  # noqa: S102 -- running the task is the point
            inputs = namespace["get_inputs"]()
    except Exception:  # noqa: BLE001 -- inputs that cannot be built on meta: size unknown
        return None
    return [t.numel() for t in _flatten(inputs) if isinstance(t, torch.Tensor)]


def largest_input(source: str) -> int | None:
    """Elements of the largest tensor ``get_inputs()`` makes, or None if that fails."""
    sizes = _meta_input_sizes(source)
    return None if sizes is None else max(sizes, default=0)


def _input_numel(source: str) -> int | None:
    """Total elements of ``get_inputs()``, or None if that fails."""
    sizes = _meta_input_sizes(source)
    return None if sizes is None else sum(sizes)


# ---------------------------------------------------------------- tiny
def _make_tiny(task: KernelTask, same_divisibility: bool = False) -> KernelTask:
    try:
        constants = find_constants(task.source)
    except SyntaxError as exc:
        raise TaskError(f"{task.name}: syntax error on line {exc.lineno}: {exc.msg}") from None
    errors = []
    for new_values in _tiny_candidates(constants):
        if same_divisibility:
            new_values = _keep_divisibility(constants, new_values)
        if not new_values:
            continue
        source = rewrite_constants(task.source, constants, new_values)
        if not _small_inputs(source):
            errors.append("inputs too large to run on CPU")
            continue
        result = run_source(source)
        if result.ok and TINY_MAX_S <= result.seconds < 3 * TINY_MAX_S:
            result = run_source(source)  # once more, warm: an op's first call (an LSTM's) can take a second alone
        if result.ok and result.seconds < TINY_MAX_S:
            return _variant(task, "tiny", source, constants, new_values)
        if result.ok:
            errors.append(f"the smallest shapes that run take {result.seconds:.1f} s")
            break  # candidates only grow from here: the rest would be slower still
        errors.append(result.error)
    # nothing shrinks (or nothing shrunk runs): fine if already small and fast, but never run a large original
    result = run_source(task.source) if _small_inputs(task.source) else RunResult(False, error="inputs too large")
    if result.ok and result.seconds < TINY_MAX_S:
        return _variant(task, "tiny", task.source, constants, {})
    reason = errors[-1] if errors else result.error or "no shape constants to shrink"
    raise TaskError(f"{task.name}: no tiny variant runs ({reason})")


def smallest_source(task: KernelTask) -> str | None:
    """The task with every size 1 and ``TINY_LAYERS`` layers (divisors and fixed structure as written): a lower
    bound on any tiny variant's cost, not a variant (it need not run); None without sizes to set."""
    try:
        constants = find_constants(task.source)
    except SyntaxError:
        return None
    ones = {i: tuple(1 for _ in c.value) if isinstance(c.value, tuple) else 1
            for i, c in enumerate(constants) if c.kind in SIZE_KINDS}
    ones = {i: v for i, v in _fewer_layers(constants, ones).items() if v != constants[i].value}
    return rewrite_constants(task.source, constants, ones) if ones else None


TRITON_DIVISOR = 16  # Triton specializes integer arguments by divisibility by 16 (and by being 1)


def _keep_divisibility(constants: list[Constant], new_values: dict[int, object]) -> dict[int, object]:
    """``new_values`` with each size whose original is a multiple of 16 rounded up to one (a shrink that breaks
    a constraint between sizes, groups that no longer divide channels, fails its run and the next is tried)."""
    kept = {}
    for i, value in new_values.items():
        old = constants[i].value
        if constants[i].kind == "count":  # a number of layers, not a size a kernel is handed
            pass
        elif isinstance(old, tuple) and isinstance(value, tuple):  # layer widths: each kept width, however many
            value = tuple(_round16(o, v) for o, v in zip(old, value))
        elif isinstance(old, int) and isinstance(value, int):
            value = _round16(old, value)
        kept[i] = value
    return {i: v for i, v in kept.items() if v != constants[i].value}


def _round16(old: int, new: int) -> int:
    if old % TRITON_DIVISOR or new % TRITON_DIVISOR == 0:
        return new
    return -(-new // TRITON_DIVISOR) * TRITON_DIVISOR


def _small_inputs(source: str) -> bool:
    numel = _input_numel(source)
    return numel is not None and numel <= MAX_TINY_NUMEL


def _tiny_candidates(constants: list[Constant]):
    """New values per constant index, from the smallest shapes to the mildest shrink (a generator: tried in order).

    Each shrink is followed by its "tied" form, where sizes that were equal across kinds stay equal (a loss whose
    target has ``batch_size`` elements and whose prediction rows have ``input_shape = (batch_size,)`` elements).
    """
    seen: list[dict] = []
    deep = any(c.kind in ("layers", "count") for c in constants)
    for fewer in ((True, False) if deep else (False,)):  # a deep model: its shallow forms first, then as deep
        for candidate in _shrinks(constants):
            candidate = _fewer_layers(constants, candidate) if fewer else candidate
            for option in (candidate, _tied(constants, candidate)):
                if option not in seen:
                    seen.append(option)
                    yield option


def _fewer_layers(constants: list[Constant], candidate: dict[int, object], keep: int = TINY_LAYERS) -> dict:
    """``candidate`` with each layer count at most ``keep`` and each list of layer widths cut to ``keep`` items
    (the first and the last, and evenly spaced ones between: a narrowing MLP stays narrowing)."""
    fewer = dict(candidate)
    for i, c in enumerate(constants):
        value = candidate.get(i, c.value)
        if c.kind == "count":
            value = min(value, keep)
        elif c.kind == "layers" and len(value) > keep:
            value = tuple(value[round(k * (len(value) - 1) / (keep - 1))] for k in range(keep)) if keep > 1 \
                else value[:1]
        if value != c.value:
            fewer[i] = value
    return fewer


def _shrinks(constants: list[Constant]):
    for batch_cap, spatial_cap, feature_cap, shrink_divisors in TINY_TIERS:
        divisors = {i: _small_divisor(c.value) for i, c in enumerate(constants)
                    if c.kind == "divisor" and shrink_divisors and _small_divisor(c.value) != c.value}
        multiple = math.lcm(1, *[divisors.get(i, c.value) for i, c in enumerate(constants) if c.kind == "divisor"])
        caps = {"batch": (batch_cap, 1), "spatial": (spatial_cap, 1), "feature": (feature_cap, multiple),
                "shape": (feature_cap, 1)}  # layer widths are capped with the features (``_capped``)
        candidate = dict(divisors)
        candidate.update(_capped(constants, caps))
        yield candidate
    for factor in UNIFORM_DIVISORS:
        candidate = {}
        for i, c in enumerate(constants):
            if c.kind in ("batch", "spatial", "feature"):
                candidate[i] = max(1, c.value // factor)
            elif c.kind in ("shape", "layers"):
                candidate[i] = tuple(max(1, v // factor) for v in c.value)
        yield {i: v for i, v in candidate.items() if v != constants[i].value}


def _tied(constants: list[Constant], candidate: dict[int, object]) -> dict[int, object]:
    """``candidate`` with every original size shared by constants of different kinds mapped to one new value.

    The feature kind's value wins (it respects group/head multiples); otherwise the smallest.
    """
    new_of: dict[int, list[tuple[str, int]]] = {}
    for i, c in enumerate(constants):
        if c.kind in SIZE_KINDS:
            new = _as_tuple(candidate.get(i, c.value))
            for old, value in zip(_as_tuple(c.value), new):
                new_of.setdefault(old, []).append((_size_group(c.kind), value))
    choice = {}
    for old, pairs in new_of.items():
        if len({kind for kind, _ in pairs}) > 1:
            features = [v for kind, v in pairs if kind == "feature"]
            choice[old] = min(features) if features else min(v for _, v in pairs)
    tied = dict(candidate)
    for i, c in enumerate(constants):
        if c.kind in SIZE_KINDS and any(v in choice for v in _as_tuple(c.value)):
            current = _as_tuple(candidate.get(i, c.value))
            new = tuple(choice.get(old, cur) for old, cur in zip(_as_tuple(c.value), current))
            value = new if isinstance(c.value, tuple) else new[0]
            if value != c.value:
                tied[i] = value
    return tied


def _small_divisor(value: int) -> int:
    """The largest divisor of ``value`` in 2..4 (groups=8 -> 4, heads=6 -> 3), or ``value`` itself when it has none
    (groups=5 stays 5): shrinking a group count to 1 would drop the grouping the task is about."""
    small = [d for d in range(2, min(value, 4) + 1) if value % d == 0]
    return max(small) if small else value


def _capped(constants: list[Constant], caps: dict[str, tuple[int, int]]) -> dict[int, object]:
    """Cap every size at its kind's cap; distinct originals stay distinct and ordered (cap, cap+step, ...)."""
    new_values: dict[int, object] = {}
    for kind, (cap, step) in caps.items():
        members = [i for i, c in enumerate(constants) if _size_group(c.kind) == kind]
        values = sorted({v for i in members for v in _as_tuple(constants[i].value)})
        cap = _round_up(cap, step)
        big = [v for v in values if v > cap]
        mapping = {v: v for v in values if v <= cap}
        mapping.update({v: cap + rank * step for rank, v in enumerate(big)})
        for i in members:
            old = constants[i].value
            new = tuple(mapping[v] for v in old) if isinstance(old, tuple) else mapping[old]
            if new != old:
                new_values[i] = new
    return new_values


def describe_changes(changes: dict[str, tuple]) -> str:
    """``batch_size 1024 -> 2, hidden_layer_sizes [1024] * 16 -> [8] * 2``: a variant's ``meta["changes"]``."""
    return ", ".join(f"{name} {_sizes_text(old)} -> {_sizes_text(new)}" for name, (old, new) in changes.items())


def _sizes_text(value: object) -> str:
    if not isinstance(value, (tuple, list)):
        return str(value)
    if len(value) > 2 and len(set(value)) == 1:
        return f"[{value[0]}] * {len(value)}"
    return "[" + ", ".join(str(v) for v in value) + "]"


def _size_group(kind: str) -> str:
    """Layer widths are sized as features: one mapping for both, so a width equal to a feature stays equal."""
    return "feature" if kind in WIDTH_KINDS else kind


def _as_tuple(value: int | tuple) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _round_up(value: int, multiple: int) -> int:
    return max(multiple, -(-value // multiple) * multiple)


# ---------------------------------------------------------------- alternative shapes
def _make_alts(task: KernelTask, n: int, seed: int) -> list[KernelTask]:
    """The edge variant first (every size ``2^j + 1``: ``_edge_sizes``), then the power-of-two one (``2^j``, when
    a size is not one already), then sizes moved by up to 25% (``_perturbed``), ``n`` in all."""
    try:
        constants = find_constants(task.source)
    except SyntaxError:
        return []
    if not any(c.kind in SIZE_KINDS for c in constants):
        return []
    multiple = math.lcm(1, *[c.value for c in constants if c.kind == "divisor"])
    variants: list[KernelTask] = []
    tried: list[dict] = []
    for size in (_edge, _power_of_two):
        for kinds in [ALT_KINDS] + [(kind,) for kind in ALT_KINDS]:  # all sizes at once, else one kind of size
            new_values = _edge_sizes(constants, multiple, kinds, size)
            if len(variants) < n and new_values and new_values not in tried:
                tried.append(new_values)
                source = rewrite_constants(task.source, constants, new_values)
                if _alt_runs(source):
                    variants.append(_variant(task, f"alt{len(variants) + 1}", source, constants, new_values))
                    break
    # All sizes at once first; if the task ties sizes together (e.g. a LayerNorm over a conv's output width),
    # fall back to moving one kind of size at a time.
    for attempt, kinds in enumerate([ALT_KINDS] * (2 * n) + [(kind,) for kind in ALT_KINDS for _ in range(n)]):
        if len(variants) == n:
            break
        new_values = _perturbed(constants, random.Random(f"{seed}:{attempt}"), multiple, kinds)
        if not new_values or new_values in tried:
            continue
        tried.append(new_values)
        source = rewrite_constants(task.source, constants, new_values)
        if _alt_runs(source):
            variants.append(_variant(task, f"alt{len(variants) + 1}", source, constants, new_values))
    return variants


def _alt_runs(source: str) -> bool:
    result = run_source(source, meta=True)
    if result.ok:
        return True
    numel = _input_numel(source)  # an op without a meta kernel: run for real, but only if that is cheap
    return numel is not None and numel <= MAX_REAL_ALT_NUMEL and run_source(source).ok


def _edge_sizes(constants: list[Constant], multiple: int, kinds: tuple, size: Callable[[int, int], int]
                ) -> dict[int, object]:
    """Every size of ``kinds`` set to an edge by ``size``: ``_edge`` gives 2^j + 1 for the largest 2^j below it (so
    never larger than it was, and one more than a multiple of every power-of-two block up to 2^j), where a kernel's
    last block holds one element: a loop that drops its last block, a mask off by one, a reduction that reads past
    its end is wrong there and nowhere else (issue 51: such mutants of the bundled solutions passed every other
    shape). ``_power_of_two`` gives 2^j itself: every block full, where a kernel conditioned on a width that is a
    multiple of its block (the fourteenth red team's softmax, x1.01 on widths of 256k) shows. A feature size tied
    to a divisor (groups, heads) keeps it: ``multiple`` times an edge."""
    feature_values = {v for c in constants if c.kind in WIDTH_KINDS for v in _as_tuple(c.value)}
    mapping: dict[int, int] = {}
    new_values: dict[int, object] = {}
    for i, c in enumerate(constants):
        if c.kind not in kinds:
            continue
        for v in _as_tuple(c.value):
            if v not in mapping:
                mapping[v] = size(v, multiple if v in feature_values else 1)
        new = tuple(mapping[v] for v in c.value) if isinstance(c.value, tuple) else mapping[c.value]
        if new != c.value:
            new_values[i] = new
    return new_values


def _edge(value: int, step: int) -> int:
    if value <= 4 or value < 2 * step:
        return value
    per_step = value // step
    return step * ((1 << (per_step.bit_length() - 1)) + 1) if per_step > 2 else value


def _power_of_two(value: int, step: int) -> int:
    """``step`` times the largest power of two in ``value // step`` (``value`` when small, or one already)."""
    if value <= 4 or value < 2 * step:
        return value
    return step * (1 << ((value // step).bit_length() - 1))


def _perturbed(constants: list[Constant], rng: random.Random, multiple: int, kinds: tuple) -> dict[int, object]:
    """Every size of ``kinds`` moved by up to +-25% to a value that is not a power of two; equal sizes stay equal.

    Equal means equal across kinds too: a ``batch_size`` that also appears in ``input_shape`` moves with it.
    """
    feature_values = {v for c in constants if c.kind in WIDTH_KINDS for v in _as_tuple(c.value)}
    mapping: dict[int, int] = {}
    new_values: dict[int, object] = {}
    for i, c in enumerate(constants):
        if c.kind not in kinds:
            continue
        for v in _as_tuple(c.value):
            if v not in mapping:
                mapping[v] = _nearby(v, rng, multiple if v in feature_values else 1)
        new = tuple(mapping[v] for v in c.value) if isinstance(c.value, tuple) else mapping[c.value]
        if new != c.value:
            new_values[i] = new
    return new_values


def _nearby(value: int, rng: random.Random, step: int) -> int:
    if value <= 4:
        return value
    new = _round_up(max(1, round(value * rng.uniform(1 - ALT_SPREAD, 1 + ALT_SPREAD))), step)
    while new == value or (new & (new - 1)) == 0:
        new += step
    return new


def _variant(task: KernelTask, name: str, source: str, constants: list[Constant], new_values: dict) -> KernelTask:
    changes = {constants[i].name: (constants[i].value, v) for i, v in sorted(new_values.items())}
    return dataclasses.replace(task, variant=name, source=source, meta={**task.meta, "changes": changes})


# ---------------------------------------------------------------- reduced to a budget
@dataclass(frozen=True)
class TaskCost:
    """What one forward pass of a task source needs: its largest tensor and its matmul/conv FLOPs.

    max_numel: elements of the largest input, parameter, buffer, output or intermediate tensor.
    flops: ``torch.utils.flop_counter``'s count (matmuls, convolutions, attention; elementwise ops count 0).
    """

    max_numel: int
    flops: int
    output_numel: int = 0  # elements of the forward's outputs


def task_cost(source: str) -> TaskCost | None:
    """The cost of ``Model(*get_init_inputs())(*get_inputs())``, on the meta device (no memory, no arithmetic);
    None when the task does not run there (an op without a meta kernel, a broken source)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    class Largest(TorchDispatchMode):
        """Records the largest tensor any op of the forward pass returns (intermediates included)."""

        numel = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            sizes = [t.numel() for t in _flatten(out) if isinstance(t, torch.Tensor)]
            self.numel = max([self.numel, *sizes])
            return out

    namespace: dict = {"__name__": "tritonrl_task_variant"}
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings(), \
                torch.device("meta"), _cuda_redirect("meta"):
            warnings.simplefilter("ignore")
            exec(compile_source(source, "<task variant>"), namespace)  # noqa: S102 -- running the task is the point
            model = namespace["Model"](*namespace["get_init_inputs"]())
            inputs = namespace["get_inputs"]()
            held = [*model.parameters(), *model.buffers(), *_flatten(inputs)]
            with FlopCounterMode(display=False) as counter, Largest() as largest:
                output = model(*inputs)
    except Exception:  # noqa: BLE001 -- a task that does not run on meta: cost unknown
        return None
    sizes = [t.numel() for t in held if isinstance(t, torch.Tensor)]
    out = sum(t.numel() for t in _flatten(output) if isinstance(t, torch.Tensor))
    return TaskCost(max([largest.numel, *sizes]), int(counter.get_total_flops()), out)


WIDE_FACTORS = (None, 4, 2)  # a wide variant's feature sizes: the real scale's (None), then this many times the
                             # task's, plus one, widest first
DEEP_NARROW = 16  # a deep variant's other sizes: the smallest a tl.dot block takes on a GPU (a kernel's block
                 # from next_power_of_2(3) would be refused there, at sizes the task never has)
DEEP_DEPTH = 1040  # a deep size at most this: past any one fp32 tile of K a GPU can hold (two operands of 16 x
                  # 2048 fp32 are 256 KB, over sm_90's 227 KB of shared memory: the front-end check refuses them,
                  # and so a tile of next_power_of_2(1040)); with DEEP_NARROW divisible by 16, as the 2^j shape's
                  # sizes are, so the kernels that trial specialized serve it (a new one costs a front-end check)
DEEP_NUMEL = 1 << 18  # a deep variant's largest tensor and FLOPs may reach this much even where the task is smaller
DEEP_FLOPS = 1 << 24
WIDE_ROWS = 3  # its batch
WIDE_COST = 2.0  # its largest tensor and FLOPs: at most this many times the task's
_WIDE_CACHE: dict[tuple[str, str], KernelTask | None] = {}


def wide_variant(task: KernelTask, ceiling: KernelTask | None = None) -> KernelTask | None:
    """Variant "wide": few rows, wide features: the batch ``WIDE_ROWS``, spatial sizes a quarter, every feature
    size at its size in ``ceiling`` (the task at its real scale: a bundled task's timing shape, KernelBench's as
    written) where that fits, else ``f * size + 1`` (``WIDE_FACTORS``, one more than a multiple of the task's groups
    where it has them, never over the real scale), never over ``WIDE_COST`` times the task's cost. Where a kernel
    sized to the task's widths shows: a row block fixed at 512 passes every shape no wider than 384
    (``integrity/r15_layernorm_fixed_block_512``); one fixed at 4096 passed the 4x + 1 = 4001 that came before the
    real scale's 8000 (the thirty-first red team's softmax). Where no feature can widen so (a GEMM's three sizes
    cost too much together), the "deep" variant (``_make_deep``); None when neither exists."""
    key = (task.key, ceiling.key if ceiling else "")
    return _once(_WIDE_CACHE, key, lambda: _make_wide(task, ceiling))


def _make_wide(task: KernelTask, ceiling: KernelTask | None) -> KernelTask | None:
    try:
        constants = find_constants(task.source)
        caps = {c.name: c.value for c in find_constants(ceiling.source)} if ceiling else {}
    except SyntaxError:
        return None
    base_cost = task_cost(task.source)
    if base_cost is None:
        return None
    multiple = math.lcm(1, *[c.value for c in constants if c.kind == "divisor"])
    for factor in WIDE_FACTORS:
        new_values: dict[int, object] = {}
        for i, c in enumerate(constants):
            if isinstance(c.value, tuple):
                continue
            if c.kind == "batch" and c.value > WIDE_ROWS:
                new_values[i] = WIDE_ROWS
            elif c.kind == "spatial" and c.value >= 8:
                new_values[i] = c.value // 4
            elif c.kind == "feature":
                cap = caps.get(c.name, c.value)
                wide = cap if factor is None else multiple * ((factor * c.value) // multiple + 1)
                if wide > cap:
                    wide = multiple * (cap // multiple) if cap > c.value else c.value
                if wide > c.value and wide % multiple == 0:
                    new_values[i] = wide
        if not any(constants[i].kind == "feature" for i in new_values):
            if factor is None:
                continue  # no real scale above the task's: the factors may still widen it
            return None
        source = rewrite_constants(task.source, constants, new_values)
        cost = task_cost(source)
        if cost is not None and cost.max_numel <= WIDE_COST * base_cost.max_numel \
                and cost.flops <= WIDE_COST * max(base_cost.flops, 1):
            return _variant(task, "wide", source, constants, new_values)
    return _make_deep(task, constants, caps, base_cost)


def _make_deep(task: KernelTask, constants: list[Constant], caps: dict, base_cost: TaskCost) -> KernelTask | None:
    """Variant "wide" of a task whose features cannot widen together (a GEMM): one contracted feature size (one
    the output's size does not follow: a GEMM's K) at its real scale or ``DEEP_DEPTH``, whichever is smaller (no
    tile of K that a GPU holds reaches past it), the batch and every other feature at most ``DEEP_NARROW``, in
    the first feature (source order) where that runs and costs at most ``WIDE_COST`` times the task or
    ``DEEP_NUMEL`` elements and ``DEEP_FLOPS``. A GEMM that loads all of K as one tile, with no loop, passes every
    K up to its tile (the thirty-first red team's 256 against the CPU's 200 and the GPU's 4096)."""
    multiple = math.lcm(1, *[c.value for c in constants if c.kind == "divisor"])
    small: dict[int, object] = {i: DEEP_NARROW for i, c in enumerate(constants)
                                if c.kind in ("batch", "feature") and not isinstance(c.value, tuple)
                                and c.value > DEEP_NARROW and DEEP_NARROW % multiple == 0}
    for i, c in enumerate(constants):
        if c.kind != "feature" or isinstance(c.value, tuple):
            continue
        deep = multiple * (min(caps.get(c.name, c.value), DEEP_DEPTH) // multiple)
        if deep <= c.value:
            continue  # at its real scale already: never past it
        narrow = rewrite_constants(task.source, constants, {**small, i: c.value})
        source = rewrite_constants(task.source, constants, {**small, i: deep})
        before, cost = task_cost(narrow), task_cost(source)
        if before is None or cost is None or cost.output_numel != before.output_numel:
            continue  # not contracted: the output grows with it (the wide variant's widths are for those)
        if cost.max_numel <= max(WIDE_COST * base_cost.max_numel, DEEP_NUMEL) \
                and cost.flops <= max(WIDE_COST * base_cost.flops, DEEP_FLOPS) and run_source(source, meta=True).ok:
            return _variant(task, "wide", source, constants, {**small, i: deep})
    return None


def reduced_variant(task: KernelTask, fits) -> KernelTask | None:
    """Variant "reduced": the mildest uniform shrink whose source runs on meta and satisfies ``fits(source)``;
    None when no shrink does (or the task has no size constants). ``task`` itself is never returned."""
    try:
        constants = find_constants(task.source)
    except SyntaxError:
        return None
    for new_values in _reduce_candidates(constants):
        source = rewrite_constants(task.source, constants, new_values)
        if run_source(source, meta=True).ok and fits(source):
            return _variant(task, "reduced", source, constants, new_values)
    return None


def _reduce_candidates(constants: list[Constant]):
    """Every size divided by 2, 4, 8, ..., first never below ``REDUCE_FLOOR``, then down to 1; then, for tasks
    whose spatial sizes cannot shrink (a conv then two poolings), the batch alone, then batch and features; last,
    for a deep model (layer widths or counts from ``get_init_inputs``), every size again with ``TINY_LAYERS``
    layers. Each is followed by its tied form (sizes written equal stay equal); no candidate twice."""
    multiple = math.lcm(1, *[c.value for c in constants if c.kind == "divisor"])
    seen: list[dict] = []
    widths = ("feature", "layers")
    passes = [(REDUCE_FLOOR, SIZE_KINDS, False), (1, SIZE_KINDS, False), (1, ("batch",), False),
              (1, ("batch", *widths), False)]
    if any(c.kind in ("layers", "count") for c in constants):
        passes.append((1, SIZE_KINDS, True))
    for floor, kinds, fewer in passes:
        for factor in REDUCE_FACTORS:
            candidate = {}
            for i, c in enumerate(constants):
                if c.kind in kinds:
                    step = multiple if c.kind in WIDTH_KINDS else 1
                    new = tuple(_reduced(v, factor, floor, step) for v in _as_tuple(c.value))
                    value = new if isinstance(c.value, tuple) else new[0]
                    if value != c.value:
                        candidate[i] = value
            candidate = _fewer_layers(constants, candidate) if fewer else candidate
            for option in (candidate, _tied(constants, candidate)):
                if option and option not in seen:
                    seen.append(option)
                    yield option


def _reduced(value: int, factor: int, floor: int, step: int) -> int:
    return min(value, max(min(value, floor), _round_up(value // factor, step)))


# ---------------------------------------------------------------- timing shapes (GPU)
TIMING_SHAPES_PATH = Path(__file__).resolve().parent / "bundled" / "timing_shapes.json"
# A rough H100 roofline for estimates (not measurements): HBM3 bandwidth, fp32 FMA throughput (torch's fp32 matmul
# does not use TF32 by default), and cuDNN convolutions, which do use TF32 tensor cores by default
# (``torch.backends.cudnn.allow_tf32``).
H100_BYTES_PER_S = 3.0e12
H100_FP32_FLOPS_PER_S = 50e12
H100_CONV_FLOPS_PER_S = 150e12
TIMING_TARGET_MS = 0.5  # a timing shape's reference should take at least this long on an H100 ...
TIMING_TARGET_BYTES = 64 << 20  # ... or, when memory-bound, move at least this much (inputs, params, outputs)

_TIMING_CACHE: dict[str, KernelTask | None] = {}


@dataclass(frozen=True)
class TaskTraffic:
    """What one eager forward pass reads, writes and computes, measured on the meta device (no memory used).

    input_bytes, param_bytes, output_bytes: the tensors a single fused kernel must at least read or write
        (``io_bytes`` is their sum); parameters include buffers.
    op_bytes: the sum over the ops that eager PyTorch runs (views excepted) of the bytes each reads and writes.
    flops: matmul-like FLOPs (``torch.utils.flop_counter``); conv_flops: convolutions' (counted apart: TF32).
    largest_bytes: the largest single tensor (input, parameter, output or intermediate).
    est_ms: per op, the slower of its bytes at ``H100_BYTES_PER_S`` and its FLOPs at the fp32 (or conv) rate,
        summed: an H100 lower bound for the reference, launch overheads not counted.
    """

    input_bytes: int
    param_bytes: int
    output_bytes: int
    op_bytes: int
    flops: int
    conv_flops: int
    largest_bytes: int
    est_ms: float

    @property
    def io_bytes(self) -> int:
        return self.input_bytes + self.param_bytes + self.output_bytes

    @property
    def memory_bound(self) -> bool:
        """Whether moving the bytes takes longer than the arithmetic (at the rates above)."""
        compute_s = self.flops / H100_FP32_FLOPS_PER_S + self.conv_flops / H100_CONV_FLOPS_PER_S
        return self.op_bytes / H100_BYTES_PER_S >= compute_s

    @property
    def meets_target(self) -> bool:
        """At least ``TIMING_TARGET_MS`` estimated, or memory-bound and at least ``TIMING_TARGET_BYTES`` moved."""
        return self.est_ms >= TIMING_TARGET_MS or (self.memory_bound and self.io_bytes >= TIMING_TARGET_BYTES)


def task_traffic(source: str) -> TaskTraffic | None:
    """``TaskTraffic`` of ``Model(*get_init_inputs())(*get_inputs())`` on the meta device; None when it does not
    run there."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import flop_registry

    def nbytes(tensors) -> int:
        unique = {id(t): t for t in tensors if isinstance(t, torch.Tensor)}
        return sum(t.numel() * t.element_size() for t in unique.values())

    class Ops(TorchDispatchMode):
        """Per op (views excepted): bytes read and written, FLOPs, whether it is a convolution."""

        def __init__(self) -> None:
            super().__init__()
            self.ops: list[tuple[int, int, bool]] = []
            self.largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            self.largest = max([self.largest, *(nbytes([t]) for t in outs)])
            if not func.is_view:
                packet = func.overloadpacket
                flops = flop_registry[packet](*args, **kwargs, out_val=out) if packet in flop_registry else 0
                moved = nbytes([*tree_flatten((args, kwargs))[0], *outs])
                self.ops.append((moved, int(flops), packet is torch.ops.aten.convolution))
            return out

    namespace: dict = {"__name__": "tritonrl_task_variant"}
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), warnings.catch_warnings(), \
                torch.device("meta"), _cuda_redirect("meta"):
            warnings.simplefilter("ignore")
            exec(compile_source(source, "<task variant>"), namespace)  # noqa: S102 -- running the task is the point
            model = namespace["Model"](*namespace["get_init_inputs"]())
            inputs = [t for t in _flatten(namespace["get_inputs"]()) if isinstance(t, torch.Tensor)]
            with Ops() as ops:
                outputs = [t for t in _flatten(model(*inputs)) if isinstance(t, torch.Tensor)]
    except Exception:  # noqa: BLE001 -- a task that does not run on meta: traffic unknown
        return None
    params = [*model.parameters(), *model.buffers()]
    seconds = sum(max(moved / H100_BYTES_PER_S,
                      flops / (H100_CONV_FLOPS_PER_S if conv else H100_FP32_FLOPS_PER_S)) for moved, flops, conv in ops.ops)
    return TaskTraffic(
        input_bytes=nbytes(inputs), param_bytes=nbytes(params), output_bytes=nbytes(outputs),
        op_bytes=sum(moved for moved, _, _ in ops.ops), flops=sum(f for _, f, conv in ops.ops if not conv),
        conv_flops=sum(f for _, f, conv in ops.ops if conv),
        largest_bytes=max([ops.largest, *(nbytes([t]) for t in [*inputs, *params])]), est_ms=seconds * 1e3)


def timing_shapes() -> dict[str, dict]:
    """The bundled suite's timing shapes (``bundled/timing_shapes.json``): task name -> {"sizes": {constant:
    value}, "note": why these (optional), "below_target": why the target cannot be met (optional)}."""
    import json

    return {name: entry for name, entry in json.loads(TIMING_SHAPES_PATH.read_text()).items()
            if not name.startswith("_")}


def timing_variant(task: KernelTask) -> KernelTask | None:
    """Variant "timing": a bundled task at KernelBench scale, for full trials and timing on a GPU (the tiny and
    alternative shapes stay for checks; the CPU reduces sizes to its own budget). None for a task without one:
    KernelBench tasks (already real-size), files, and any variant of a task. Raises ``TaskError`` when the shapes
    name a constant the task does not define, or the resized task does not run on the meta device."""
    if task.origin != "bundled" or task.variant:
        return None
    def make() -> KernelTask | None:
        entry = timing_shapes().get(task.name)
        return _make_timing(task, entry["sizes"]) if entry else None

    return _once(_TIMING_CACHE, task.key, make)


def _make_timing(task: KernelTask, sizes: dict[str, int | list[int]]) -> KernelTask:
    constants = find_constants(task.source)
    index = {c.name: i for i, c in enumerate(constants)}
    unknown = sorted(set(sizes) - set(index))
    if unknown:
        raise TaskError(f"{task.name}: timing shape names constants the task does not define: {', '.join(unknown)}")
    new_values = {index[name]: tuple(value) if isinstance(value, list) else value for name, value in sizes.items()}
    new_values = {i: v for i, v in new_values.items() if v != constants[i].value}
    source = rewrite_constants(task.source, constants, new_values)
    result = run_source(source, meta=True)
    if not result.ok:
        raise TaskError(f"{task.name}: its timing shape does not run ({result.error})")
    return _variant(task, "timing", source, constants, new_values)
