"""Static checks on candidate code, run before any of it executes (the ``static`` stage of the funnel).

    from tritonrl.verify.static import run_static_checks, CHECKS
    run_static_checks(code)                 # [] when the code passes
    run_static_checks(code, strict=False)   # permissive: skips the strict-only checks (torch compute, streams)

Each check is a small function with a one-line rationale (its docstring), registered in ``CHECKS`` with its flag.
Everything is read from the AST (``static_scope.Scope``): comments and strings never trigger or hide a check.
A syntax error stops the checks; otherwise every check runs and all violations are returned, sorted by line.

Decisions worth knowing (docs/verifier.md has the full table):
- try: every ``try`` outside ``@triton.jit`` bodies is rejected (``try/finally`` too: ``return`` in ``finally``
  swallows the exception), except a module-level ``try`` whose body only imports (version-portable imports).
  ``contextlib.suppress`` / ``ExitStack`` and any class defining ``__exit__`` are rejected the same way.
- imports: an allowlist (``ALLOWED_IMPORTS``); threads, exits and introspection modules get their own flags.
- the name ``Model``: any use outside an echoed ``class Model`` body is reference reuse, as is the string
  ``"Model"`` outside a docstring.
- torch compute (strict): on the forward path, ``torch.*`` calls outside ``ALLOWED_TORCH``, ``F.*``, numpy,
  ``nn`` submodule calls, tensor methods outside ``LAYOUT_METHODS``, and operators on inferred tensors.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tritonrl.verify.flags import RATIONALE, Flag
from tritonrl.verify.static_scope import Kind, Scope, const_str, dotted, is_dunder


@dataclass(frozen=True)
class StaticViolation:
    """One reason to reject: the flag, a model-readable message naming the construct, and its line."""

    flag: Flag
    message: str
    line: int | None = None
    check: str = ""


@dataclass(frozen=True)
class Check:
    name: str
    flag: Flag
    run: Callable[[Scope], Iterator[tuple[ast.AST | None, str]]]
    strict_only: bool = False

    @property
    def rationale(self) -> str:
        return " ".join((self.run.__doc__ or "").split())


# fmt: off
ALLOWED_IMPORTS = frozenset({"torch", "triton", "numpy", "math", "typing", "typing_extensions", "functools",
    "itertools", "dataclasses", "collections", "operator", "enum", "abc", "__future__", "numbers", "warnings",
    "random", "os", "sys", "time", "contextlib", "copy", "string", "re"})
THREAD_MODULES = frozenset({"threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio",
    "sched", "torch.multiprocessing", "torch.distributed"})
EXIT_MODULES = frozenset({"signal", "atexit", "faulthandler"})
INTROSPECTION_MODULES = frozenset({"builtins", "__builtin__", "gc", "inspect", "ctypes.pythonapi"})
FOREIGN_CODE = ("torch.utils.cpp_extension", "torch.cuda.jiterator", "torch.cuda._compile_kernel",
    "torch.ops.load_library", "torch.classes.load_library", "numpy.ctypeslib")
COMPILERS = ("torch.compile", "torch._dynamo", "torch._inductor", "torch.jit.script", "torch.jit.trace",
    "torch.export", "torch.compiler.compile")
PROCESS_CALLS = ("os.fork", "os.forkpty", "os.system", "os.popen", "os.spawn", "os.exec", "os.posix_spawn",
    "os.register_at_fork")
EXIT_NAMES = frozenset({"os._exit", "os.abort", "os.kill", "os.killpg", "sys.exit", "exit", "quit",
    "SystemExit", "KeyboardInterrupt"})
OS_ALLOWED = ("os.environ", "os.getenv", "os.path", "os.cpu_count", "os.getpid", "os.sep", "os.name")
SYS_ALLOWED = frozenset({"sys.maxsize", "sys.version_info", "sys.version", "sys.platform", "sys.float_info",
    "sys.byteorder", "sys.stdout", "sys.stderr", "sys.getrecursionlimit", "sys.exit"})
DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "__builtins__", "exec", "eval", "compile",
    "breakpoint"})
INTROSPECTION_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "f_builtins", "gi_frame", "cr_frame",
    "tb_frame", "__globals__", "__code__", "__closure__", "__subclasses__", "__mro__", "__bases__",
    "__base__", "__builtins__", "__dict__", "__loader__", "__spec__", "__getattribute__"})
GLOBAL_STATE_CALLS = frozenset({"torch.manual_seed", "torch.seed", "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all", "torch.random.manual_seed", "torch.set_rng_state",
    "torch.cuda.set_rng_state", "random.seed", "numpy.random.seed", "torch.set_default_dtype",
    "torch.set_default_tensor_type", "torch.set_default_device", "torch.set_float32_matmul_precision",
    "torch.use_deterministic_algorithms", "torch.set_flush_denormal"})
SIDE_STREAMS = frozenset({"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.cuda.ExternalStream", "torch.Stream", "torch.cuda.streams",
    "torch.cuda.graph", "torch.cuda.CUDAGraph"})
ALLOWED_TORCH = frozenset({"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "arange", "tensor", "as_tensor", "device", "Size", "finfo", "iinfo", "is_tensor",
    "is_floating_point", "is_complex", "get_default_dtype", "broadcast_shapes", "result_type",
    "promote_types", "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "numel", "reshape", "flatten", "permute", "transpose", "t", "unsqueeze", "squeeze", "narrow", "select",
    "chunk", "split", "unbind", "movedim", "swapaxes", "as_strided"})
LAYOUT_METHODS = frozenset({"contiguous", "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten",
    "permute", "transpose", "t", "unsqueeze", "squeeze", "expand", "expand_as", "narrow", "select", "unbind",
    "chunk", "split", "movedim", "moveaxis", "swapaxes", "swapdims", "as_strided", "to", "type", "type_as",
    "float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char", "cuda", "cpu",
    "detach", "requires_grad_", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided",
    "new_tensor", "zero_", "fill_", "pin_memory", "record_stream", "untyped_storage", "storage", "is_set_to",
    "is_same_size"})
PERMUTING = frozenset({"t", "transpose", "permute", "movedim", "moveaxis", "swapaxes", "swapdims", "expand",
    "expand_as", "T", "mT", "mH", "H"})
MATERIALIZING = frozenset({"contiguous", "reshape", "flatten", "reshape_as"})
# Names common on non-tensor objects: only flagged when the receiver is known to be a tensor.
GENERIC_NAMES = frozenset({"values", "index", "add", "sort", "copy_", "name", "map_", "apply_", "set_", "data"})
_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift")
ARITH_DUNDERS = frozenset(f"__{p}{op}__" for op in _OPS for p in ("", "r", "i")) | frozenset({"__neg__", "__pos__",
    "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__getitem__",
    "__setitem__"})
BUILTIN_REDUCERS = frozenset({"abs", "sum", "pow", "round", "min", "max", "divmod"})
# fmt: on


@functools.cache
def tensor_compute_methods() -> frozenset[str]:
    """Every public torch.Tensor method that is not layout/allocation/metadata, plus arithmetic dunders."""
    import torch  # lazily: only the torch-compute check needs it

    from tritonrl.verify.static_scope import META_METHODS

    public = {m for m in dir(torch.Tensor) if not m.startswith("_")}
    return (
        frozenset(
            public
            - LAYOUT_METHODS
            - META_METHODS
            - {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "itemsize", "nbytes", "is_leaf"}
        )
        | ARITH_DUNDERS
    )


def _code(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------- basic shape
def check_syntax(scope: Scope):
    """The code must parse as Python."""
    return iter(())  # handled in run_static_checks: a syntax error stops all checks


def check_modelnew(scope: Scope):
    """The answer must define class ModelNew at module level, once, and never rebind it."""
    if scope.modelnew is None:
        yield None, "no `class ModelNew` at module level; define class ModelNew(nn.Module)"
    for node in scope.modelnew_rebound:
        yield node, f"`{_code(node)}` rebinds ModelNew; define it once, as a class"


def check_triton_kernel(scope: Scope):
    """The answer must define at least one @triton.jit kernel."""
    if not scope.kernel_nodes:
        yield None, "no @triton.jit kernel defined; write the computation as a @triton.jit kernel"


# ---------------------------------------------------------------------------------------------- fallbacks
def _import_only(node: ast.Try) -> bool:
    return all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in node.body)


def check_try_except(scope: Scope):
    """A try (or suppressing context manager) lets a broken kernel fall back to PyTorch silently."""
    top_level = {id(n) for n in scope.tree.body}
    for node in _walk_outside_kernels(scope, scope.tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if not (id(node) in top_level and _import_only(node)):
                yield (
                    node,
                    (
                        f"`try` at line {node.lineno}: no try/except or try/finally outside kernels "
                        "(only a module-level try around imports is allowed)"
                    ),
                )
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (
            "__exit__",
            "__aexit__",
        ):
            yield node, f"`def {node.name}`: a context manager can swallow a failing kernel's exception"
        elif isinstance(node, (ast.Attribute, ast.Name)) and scope.qualname(node) in (
            "contextlib.suppress",
            "contextlib.ExitStack",
            "contextlib.AsyncExitStack",
        ):
            yield node, f"`{_code(node)}` swallows exceptions around kernel launches"


def check_reference_reuse(scope: Scope):
    """Inheriting from, building or looking up the reference Model computes the answer with it."""
    echoed = scope.classes.get("Model")
    inside = {id(n) for n in ast.walk(echoed)} if echoed is not None else set()
    docstrings = _docstring_ids(scope.tree)
    for node in ast.walk(scope.tree):
        if id(node) in inside and node is not echoed:
            continue
        if isinstance(node, ast.Name) and node.id == "Model":
            yield node, "`Model` (the reference) is used; ModelNew must not inherit from, build or call it"
        elif isinstance(node, ast.Attribute) and node.attr == "Model":
            yield node, f"`{_code(node)}` looks up the reference Model"
        elif isinstance(node, ast.Constant) and node.value == "Model" and id(node) not in docstrings:
            yield node, 'the string "Model" is used; looking up the reference by name is reference reuse'
        elif isinstance(node, ast.alias) and (node.name == "Model" or node.name.split(".")[0] == "__main__"):
            yield node, f"`{node.name}` is imported: the reference must not be imported"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "__main__":
            yield node, "`from __main__ import ...` imports the reference module"


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


# ---------------------------------------------------------------------------------------------- harness safety
def check_tampering(scope: Scope):
    """Patching torch/triton/numpy/builtins/timers, sys.modules or namespaces can fool the harness."""
    portable = {
        id(n)
        for t in scope.tree.body
        if isinstance(t, ast.Try) and _import_only(t)
        for h in t.handlers
        for n in ast.walk(h)
    }
    for node in ast.walk(scope.tree):
        if isinstance(node, ast.Assign) and id(node) not in portable:
            for t in node.targets:
                for n in _store_targets(t):
                    if isinstance(n, ast.Name) and n.id in scope.imported:
                        yield node, f"`{n.id} = ...` rebinds the imported name {n.id}"
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("fn", "src", "__wrapped__")
            and dotted(node.value) in scope.kernel_names
        ):
            yield node, f"`{_code(node)}` reaches the kernel's Python body; launch it with kernel[grid](...)"
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                msg = _tampering_store(scope, t)
                if msg:
                    yield node, msg
        elif isinstance(node, ast.Call):
            msg = _tampering_call(scope, node)
            if msg:
                yield node, msg
        elif isinstance(node, (ast.Name, ast.Attribute)):
            msg = _tampering_ref(scope, node)
            if msg:
                yield node, msg
        elif isinstance(node, ast.ClassDef):
            msg = _tampering_class(scope, node)
            if msg:
                yield node, msg
        elif isinstance(node, ast.alias) and node.name.split(".")[0] in INTROSPECTION_MODULES:
            yield node, f"`import {node.name}`: introspection of the harness is not allowed"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in INTROSPECTION_MODULES:
            yield node, f"`from {node.module} import ...`: introspection of the harness is not allowed"


def _store_targets(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            yield from _store_targets(t)
    elif isinstance(target, ast.Starred):
        yield from _store_targets(target.value)
    else:
        yield target


def _tampering_store(scope: Scope, target: ast.AST) -> str | None:
    for t in _store_targets(target):
        if isinstance(t, ast.Attribute):
            root = dotted(t.value)
            if scope.is_module_ref(t.value):
                return f"`{_code(t)} = ...` patches {scope.qualname(t.value)}"
            if is_dunder(t.attr):
                return f"`{_code(t)} = ...` overrides a special attribute"
            if root and root.split(".")[0] in scope.classes and root != "self":
                return f"`{_code(t)} = ...` rebinds a class attribute after its definition"
            if root == "self" and t.attr in ("forward", "__call__", "_call_impl", "_wrapped_call_impl"):
                return f"`{_code(t)} = ...` replaces forward at run time, hiding it from the checks"
        elif isinstance(t, ast.Subscript):
            q = scope.qualname(t.value) or ""
            if scope.is_module_ref(t.value) or q.startswith("os.environ"):
                return f"`{_code(t)} = ...` writes into {q}"
    return None


def _tampering_call(scope: Scope, node: ast.Call) -> str | None:
    q = scope.qualname(node.func) or ""
    if q in ("setattr", "delattr") and node.args:
        obj, name = node.args[0], const_str(node.args[1]) if len(node.args) > 1 else None
        if scope.is_module_ref(obj) or isinstance(obj, ast.Call) or (dotted(obj) or "") in scope.classes:
            return f"`{_code(node)}` patches {_code(obj)}"
        if name is None or is_dunder(name) or name in ("forward", "_call_impl"):
            return f"`{_code(node)}`: setattr with a computed or special name hides what is patched"
    if q in GLOBAL_STATE_CALLS:
        return f"`{_code(node)}` changes global state the harness relies on (seeds, default dtype, precision)"
    if q.startswith("os.environ.") and q.rsplit(".", 1)[-1] not in ("get", "copy", "keys", "items", "values"):
        return f"`{_code(node)}` changes the harness's environment"
    if (
        q == "getattr"
        and len(node.args) >= 2
        and const_str(node.args[1]) is None
        and scope.is_module_ref(node.args[0])
    ):
        return f"`{_code(node)}`: a computed attribute of a module hides what is used"
    return None


def _tampering_ref(scope: Scope, node: ast.Name | ast.Attribute) -> str | None:
    if (
        isinstance(node, ast.Attribute)
        and node.attr in INTROSPECTION_ATTRS
        and dotted(node) != "self.__dict__"
    ):
        return f"`{_code(node)}`: frame or object-graph introspection is not allowed"
    q = scope.qualname(node) or ""
    if isinstance(node, ast.Name) and node.id in DYNAMIC_NAMES and node.id not in scope.aliases:
        return f"`{node.id}`: dynamic code or namespace access hides what the code does"
    if (
        q.startswith("sys.")
        and isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and q not in SYS_ALLOWED
    ):
        return f"`{_code(node)}`: {q} can reach or replace the harness's modules and frames"
    if q in ("os.putenv", "os.unsetenv", "os.chdir"):
        return f"`{_code(node)}` changes the harness's environment"
    return None


def _tampering_class(scope: Scope, node: ast.ClassDef) -> str | None:
    if any((scope.qualname(b) or "") in ("torch.Tensor", "torch._C.TensorBase") for b in node.bases):
        return f"`class {node.name}` subclasses torch.Tensor; outputs must be plain tensors"
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in (
            "__torch_function__",
            "__torch_dispatch__",
        ):
            return f"`{node.name}.{item.name}` intercepts torch operations"
    return None


def check_threads(scope: Scope):
    """Threads and side processes can finish work outside the timed or checked window."""
    for node in ast.walk(scope.tree):
        for name in _imported_modules(node):
            if any(name == m or name.startswith(m + ".") for m in THREAD_MODULES):
                yield node, f"`import {name}`: threads and processes are not allowed"
        if isinstance(node, (ast.Name, ast.Attribute)) and (scope.qualname(node) or "").startswith(
            PROCESS_CALLS
        ):
            yield node, f"`{_code(node)}` starts a process"


def check_side_streams(scope: Scope):
    """Work on another CUDA stream can escape the timer (strict mode; the runtime also syncs device-wide)."""
    for node in ast.walk(scope.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and scope.qualname(node) in SIDE_STREAMS:
            yield node, f"`{_code(node)}`: launch on the current stream; side streams can escape the timer"


def check_process_exit(scope: Scope):
    """Exiting or signalling the process (os._exit, sys.exit, kill) can skip the checks."""
    for node in ast.walk(scope.tree):
        for name in _imported_modules(node):
            if name.split(".")[0] in EXIT_MODULES:
                yield node, f"`import {name}`: signals and exit hooks are not allowed"
        if isinstance(node, (ast.Name, ast.Attribute)) and scope.qualname(node) in EXIT_NAMES:
            yield node, f"`{_code(node)}` exits the process"


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            return ["." * node.level + (node.module or "")]
        return [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
    return []


def check_forbidden_imports(scope: Scope):
    """Only kernel-writing modules are allowed: no sockets, files, pickling, C/CUDA source or dynamic imports."""
    flagged_elsewhere = THREAD_MODULES | EXIT_MODULES | INTROSPECTION_MODULES
    for node in ast.walk(scope.tree):
        names = _imported_modules(node)
        for name in names[:1] if isinstance(node, ast.ImportFrom) else names:
            top = name.split(".")[0]
            if (
                top in flagged_elsewhere
                or top == "__main__"
                or any(name.startswith(m) for m in flagged_elsewhere if "." in m)
            ):
                continue
            if top not in ALLOWED_IMPORTS:
                yield (
                    node,
                    f"`import {name}` is not allowed (allowed: {', '.join(sorted(ALLOWED_IMPORTS)[:8])}, ...)",
                )
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            yield node, f"`from {node.module} import *` hides where names come from; import names explicitly"
        for name in names:
            if name.startswith(FOREIGN_CODE):
                yield node, f"`{name}`: CUDA/C++ source instead of Triton is not allowed"
        if isinstance(node, (ast.Name, ast.Attribute)):
            q = scope.qualname(node) or ""
            if q.startswith(FOREIGN_CODE) or q.endswith(".load_inline") or q == "load_inline":
                yield node, f"`{_code(node)}`: CUDA/C++ source instead of Triton is not allowed"
            elif isinstance(node, ast.Name) and q in ("__import__", "open"):
                yield node, f"`{q}`: dynamic imports and file access are not allowed"
            elif (
                q.startswith("os.")
                and not q.startswith(OS_ALLOWED)
                and isinstance(node.value, ast.Name)
                and not q.startswith(PROCESS_CALLS)
                and q not in EXIT_NAMES
                and q not in ("os.putenv", "os.unsetenv", "os.chdir")
            ):
                yield node, f"`{_code(node)}`: file-system and OS access is not allowed"


def check_torch_compile(scope: Scope):
    """torch.compile / Inductor / TorchScript write the kernels for you (their launches pass the launch check)."""
    for node in ast.walk(scope.tree):
        names = _imported_modules(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            names = [scope.qualname(node) or ""]
        for name in names:
            if name.startswith(COMPILERS):
                yield node, f"`{name}` generates the kernel; write the Triton kernel yourself"
                break


# ---------------------------------------------------------------------------------------------- torch compute
def check_torch_compute(scope: Scope):
    """High-level torch compute on ModelNew's forward path does the work instead of Triton (strict mode)."""
    if scope.modelnew is not None:
        for base in scope.modelnew.bases:
            q = scope.qualname(base) or ""
            if q.startswith("torch.nn.") and q != "torch.nn.Module":
                yield base, f"ModelNew inherits {q}: its forward is PyTorch compute"
    yield from _compute_function_references(scope)
    for node in ast.walk(scope.tree):
        if id(node) in scope.kernel_nodes:
            for n in ast.walk(node):
                if (
                    isinstance(n, (ast.Name, ast.Attribute))
                    and (scope.qualname(n) or "").startswith(("torch.", "numpy."))
                    and not _is_dtype_name(scope.qualname(n))
                ):
                    yield n, f"`{_code(n)}` inside @triton.jit kernel {node.name} is not Triton"
    for fn in scope.forward_path:
        env = scope.env(fn)
        where = scope.owner_name(fn)
        for node in _walk_outside_kernels(scope, fn):
            msg = _compute_message(scope, node, env)
            if msg:
                yield node, f"{msg} in {where}; do this work in a @triton.jit kernel"


def _compute_function_references(scope: Scope):
    """A torch compute function used as a value anywhere (``partial(torch.relu)``, ``{"act": F.gelu}``)."""
    echoed = scope.classes.get("Model")
    skip = {id(n) for n in ast.walk(echoed)} if echoed is not None else set()
    for node in _walk_outside_kernels(scope, scope.tree):
        if isinstance(node, ast.Call):
            skip.add(id(node.func))
        elif isinstance(node, ast.Attribute):
            skip.add(id(node.value))
        if (
            isinstance(node, (ast.Name, ast.Attribute))
            and id(node) not in skip
            and isinstance(node.ctx, ast.Load)
            and _is_torch_compute_function(scope.qualname(node) or "")
        ):
            yield node, f"`{_code(node)}` passes {scope.qualname(node)} around as a value"


def _is_dtype_name(q: str) -> bool:
    return q.rsplit(".", 1)[-1] in (
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "dtype",
    )


def _is_torch_compute_function(q: str) -> bool:
    if not q.startswith("torch.") or _torch_call_allowed(q):
        return False
    import torch  # lazily, as in tensor_compute_methods

    obj = torch
    for part in q.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj) and not isinstance(obj, type)


def _torch_call_allowed(q: str) -> bool:
    last = q.rsplit(".", 1)[-1]
    if q.startswith(("torch.cuda.", "torch.backends.")) or q in GLOBAL_STATE_CALLS:
        return True  # streams and global state have their own checks
    if q.startswith("torch.Tensor."):
        return last in LAYOUT_METHODS or last in ("shape", "dtype", "device")
    return q.count(".") == 1 and last in ALLOWED_TORCH


def _compute_message(scope: Scope, node: ast.AST, env: dict[str, Kind]) -> str | None:
    if isinstance(node, ast.Call):
        return _compute_call(scope, node, env)
    if isinstance(node, ast.BinOp):
        sides = (scope.kind(node.left, env), scope.kind(node.right, env))
        if isinstance(node.op, ast.MatMult) or Kind.TENSOR in sides:
            return f"`{_code(node)}` is tensor arithmetic"
    elif isinstance(node, ast.AugAssign):
        if Kind.TENSOR in (scope.kind(node.target, env), scope.kind(node.value, env)) or isinstance(
            node.op, ast.MatMult
        ):
            return f"`{_code(node)}` is tensor arithmetic"
    elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        if scope.kind(node.operand, env) == Kind.TENSOR:
            return f"`{_code(node)}` is tensor arithmetic"
    elif isinstance(node, ast.Compare) and scope.kind(node, env) == Kind.TENSOR:
        return f"`{_code(node)}` is a tensor comparison"
    elif isinstance(node, ast.Subscript) and scope.kind(node.value, env) == Kind.TENSOR:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            return f"`{_code(node)} = ...` writes into a tensor with PyTorch indexing"
        if any(scope.kind(n, env) == Kind.TENSOR for n in ast.walk(node.slice)):
            return f"`{_code(node)}` is tensor-indexed (a gather)"
    return None


def _compute_call(scope: Scope, node: ast.Call, env: dict[str, Kind]) -> str | None:
    q = scope.qualname(node.func) or ""
    last = q.rsplit(".", 1)[-1]
    if q.startswith("torch."):
        if q.startswith("torch.nn.") and last[:1].isupper():
            return f"`{_code(node)}` builds an nn layer on the forward path"
        return None if _torch_call_allowed(q) else f"`{_code(node)}` calls {q}"
    if q in ("operator.methodcaller", "operator.attrgetter") or (
        q == "getattr" and len(node.args) >= 2 and const_str(node.args[1]) is None
    ):
        return f"`{_code(node)}` calls a method chosen at run time"
    if q.startswith("numpy.") and last not in ("prod", "dtype"):
        return f"`{_code(node)}` computes with numpy"
    if q.startswith("operator.") and any(scope.kind(a, env) == Kind.TENSOR for a in node.args):
        return f"`{_code(node)}` is tensor arithmetic"
    if (
        q in BUILTIN_REDUCERS
        and isinstance(node.func, ast.Name)
        and any(scope.kind(a, env) == Kind.TENSOR for a in node.args)
    ):
        return f"`{_code(node)}` computes on a tensor with a Python builtin"
    if scope.kind(node.func, env) == Kind.MODULE:
        return f"`{_code(node)}` calls an nn submodule"
    if isinstance(node.func, ast.Attribute):
        return _compute_method(scope, node, env)
    if isinstance(node.func, ast.Call) and dotted(node.func.func) == "getattr" and len(node.func.args) >= 2:
        method = ast.Attribute(value=node.func.args[0], attr=const_str(node.func.args[1]), ctx=ast.Load())
        return _compute_method(scope, ast.Call(func=method, args=node.args, keywords=node.keywords), env)
    return None


def _compute_method(scope: Scope, node: ast.Call, env: dict[str, Kind]) -> str | None:
    func = node.func
    receiver, name = func.value, func.attr
    kind = scope.kind(receiver, env)
    if (
        scope.is_module_ref(receiver)
        or (dotted(receiver) in ("self", "cls") and kind is None)
        or (isinstance(receiver, ast.Call) and dotted(receiver.func) == "super")
    ):
        return None
    if kind == Kind.MODULE and (
        name in ("forward", "__call__", "_call_impl") or name in tensor_compute_methods()
    ):
        return f"`{_code(node)}` calls an nn submodule"
    if kind in (Kind.META, Kind.CONTAINER, Kind.MODULE) or isinstance(receiver, ast.Constant):
        return None
    if name in MATERIALIZING and (
        _permuted(scope, receiver, env) or any(k.arg == "memory_format" for k in node.keywords)
    ):
        return f"`{_code(node)}` materializes a permuted view (a PyTorch copy kernel)"
    if name in tensor_compute_methods() and (kind == Kind.TENSOR or name not in GENERIC_NAMES):
        return f"`{_code(node)}` is a tensor method that computes"
    return None


def _permuted(scope: Scope, node: ast.AST, env: dict[str, Kind], depth: int = 0) -> bool:
    """True when ``node`` is a transposed/permuted/expanded view (directly or through a local name)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Attribute) and node.attr in PERMUTING:
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in PERMUTING:
            return True
        if node.func.attr in LAYOUT_METHODS:
            return _permuted(scope, node.func.value, env, depth + 1)
    if isinstance(node, ast.Call) and (scope.qualname(node.func) or "").rsplit(".", 1)[-1] in PERMUTING:
        return True
    if isinstance(node, ast.Name):
        return any(_permuted(scope, v, env, depth + 1) for v in _assigned_values(scope, node.id))
    return False


def _assigned_values(scope: Scope, name: str) -> list[ast.AST]:
    return [
        n.value
        for fn in scope.forward_path
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]


def _walk_outside_kernels(scope: Scope, root: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that does not descend into @triton.jit function bodies."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(c for c in ast.iter_child_nodes(node) if id(c) not in scope.kernel_nodes)


CHECKS: list[Check] = [
    Check("syntax", Flag.SYNTAX_ERROR, check_syntax),
    Check("modelnew", Flag.NO_MODELNEW, check_modelnew),
    Check("triton_kernel", Flag.NO_TRITON_KERNEL, check_triton_kernel),
    Check("try_except", Flag.TRY_EXCEPT_FALLBACK, check_try_except),
    Check("reference_reuse", Flag.REFERENCE_REUSE, check_reference_reuse),
    Check("torch_compute", Flag.TORCH_COMPUTE, check_torch_compute, strict_only=True),
    Check("torch_compile", Flag.TORCH_COMPILE, check_torch_compile),
    Check("tampering", Flag.TAMPERING, check_tampering),
    Check("threads", Flag.THREADS, check_threads),
    Check("side_streams", Flag.THREADS, check_side_streams, strict_only=True),
    Check("process_exit", Flag.PROCESS_EXIT, check_process_exit),
    Check("forbidden_imports", Flag.FORBIDDEN_IMPORT, check_forbidden_imports),
]


def run_static_checks(code: str, strict: bool = True) -> list[StaticViolation]:
    """Every static violation in ``code`` (empty when it passes); a syntax error is reported alone."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes in the source
        line = getattr(e, "lineno", None)
        return [StaticViolation(Flag.SYNTAX_ERROR, f"syntax error: {getattr(e, 'msg', e)}", line, "syntax")]
    scope = Scope(tree)
    found: dict[tuple, StaticViolation] = {}
    for check in CHECKS:
        if check.strict_only and not strict:
            continue
        for node, message in check.run(scope):
            line = getattr(node, "lineno", None)
            found.setdefault(
                (check.flag, line, message),
                StaticViolation(check.flag, f"{check.flag.value}: {message}", line, check.name),
            )
    return sorted(found.values(), key=lambda v: (v.line or 0, v.flag.value))


def describe_checks() -> list[dict[str, str]]:
    """Name, flag, rationale and mode of every check, for docs and reports."""
    return [
        {
            "name": c.name,
            "flag": c.flag.value,
            "rationale": c.rationale or RATIONALE[c.flag],
            "mode": "strict" if c.strict_only else "always",
        }
        for c in CHECKS
    ]
