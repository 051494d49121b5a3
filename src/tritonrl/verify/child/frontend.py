"""A kernel judged on the CPU must be one a GPU compiler accepts (candidate child, CPU interpreter only).

Under ``TRITON_INTERPRET=1`` a kernel body runs as Python, so it can do what no GPU compiler would let it: call a
plain Python function (directly, through a dict, a list, ``getattr``), use numpy or torch, reach a block's host
array (``x.handle``, ``getattr(x, "handle")``). Reading the body's names for such uses is a check by spelling.
So before each launch the kernel goes through Triton's own front end for the judging GPU (sm_90: ``ast_to_ttir``,
the same code generator the GPU path runs, with this launch's argument types and constants): whatever it
rejects, however spelled, is ``InterpreterOnly`` (flag ``interpreter_only``, with the compiler's message).

A GPU also refuses a kernel that compiles but needs more shared memory per block than the device has (a
256x256x512 fp32 GEMM tile: 2-3 MiB against sm_90's 232,448 bytes; Triton raises ``OutOfResources`` at load). So
the TTIR then goes through the CUDA backend's own TTIR and TTGIR passes and its shared-memory allocation
(``shared_bytes``: layouts, pipelining, the allocation pass; no LLVM lowering, nothing built for a device, no
``ptxas``), and a kernel over the limit is refused with the GPU's own words. Those passes cost 35-60 ms per kernel
and specialization, so they run only where a bound read from the text of the backend's TTIR (``shared_bytes_bound``,
a few milliseconds with ``make_ttir``) is over the limit: small tiles, most kernels, are spared them.

Jit functions are ``InterpretedFunction``s under the interpreter (the candidate's helpers, and Triton's own
``tl.max``, ``tl.sum``, ``tl.cdiv`` ...); the front end reads the kernel through a copy of its globals in which
each is the ``JITFunction`` of the same Python function, and its code generator is taught to read one reached as
an attribute (``tl.max``) the same way.

The check is called at the interpreter's lowest launch point (``GridExecutor.__call__``, ``fidelity.py``), with the
function the interpreter is about to run, so a launch through ``GridExecutor`` itself is checked like any other.
Its verdict is kept per kernel, specialization *and reach* (``reach``: every global, closure cell, default and
module attribute the kernel's code names, and the same of the jit helpers it reaches or is handed as a
``constexpr`` argument), so a helper rebound after the first launch, or another one passed, is checked again. It fails closed: a kernel the machinery cannot put through the front end (a
Python function as an argument, which Triton's own binder refuses on a GPU too; a function without source; an API
of another Triton) is refused with the reason: a CPU verdict may not accept what no GPU compiler was shown.
"""

from __future__ import annotations

import math
import os
import re
import traceback
import types
from typing import Any

from tritonrl.verify.child.interpreter import GPU_PROPERTIES, exception_chain

# Shared memory one block may use on the judging GPU (sm_90: H100 and H200): a kernel that needs more is refused at
# load there (Triton's ``OutOfResources``)
SHARED_MEMORY_LIMIT = GPU_PROPERTIES["max_shared_mem"]
OUT_OF_SHARED_MEMORY = "out of resource: shared memory"  # how such a refusal starts (Triton's own words)
MAX_THREADS_PER_BLOCK = 1024  # every CUDA GPU since sm_20: a launch of more is refused (CUDA_ERROR_INVALID_VALUE)
OUT_OF_THREADS = "out of resource: threads"
# How a refusal starts when the installed Triton itself lacks the construct (a ``NotImplementedError`` raised in
# Triton's own code: block pointers, removed in 3.7+, which the judging GPU's 3.6 compiles): not the candidate's fault
NOT_IN_THIS_TRITON = "not implemented by this Triton"
PTX_VERSION = 87  # CUDA 12.8's, for the allocation pass when no option names one (a GPU compile asks ptxas)
_CHECKED: dict[Any, str | None] = {}
_JIT: dict[Any, tuple[tuple, Any]] = {}  # Python function -> (its reach when made, its JITFunction)
_NAMES: dict[Any, tuple[str, ...]] = {}  # code object -> every name it and its nested code read
_MISSING = object()
# A ranked tensor type in TTIR's text (no layouts there): its sizes and its element type (a pointer is one)
_TENSOR_TYPE = re.compile(r"tensor<((?:\d+x)+)(!tt\.ptr<[^<>]+>|!tt\.ptr<!tt\.ptr<[^<>]+>>|[a-zA-Z]\w*)>")
_DIGITS = re.compile(r"\d+")  # an element type's width in bits (f32, bf16, i1, f8E4M3FN)
_LOOP_STAGES = re.compile(r"tt\.num_stages = (\d+)")  # a loop's own stage count (``tl.range(num_stages=...)``)
_OP_NAME = re.compile(r"=\s*([a-z_]+\.[\w.]+)")  # ``%x = tt.load ...``: the operation's name


class FrontendUnavailable(RuntimeError):
    """This Triton's front end could not be driven here (an API this module does not know)."""


def frontend_problem(fn: Any, args: tuple, kwargs: dict) -> str | None:
    """The reason the Python kernel ``fn`` may not run for this launch's arguments (the GPU compiler's message, or
    why the front end could not be shown it), else None."""
    try:
        from triton.compiler.errors import CompilationError

        reach = kernel_reach(fn) + tuple(kernel_reach(v.fn) for v in (*args, *kwargs.values()) if _helper(v))
        jit, device, binder, backend, target = _binder(fn, reach)
        args, kwargs = tuple(_as_jit(a) for a in args), {k: _as_jit(v) for k, v in kwargs.items()}
        bound, specialization, options = binder(*args, **_options(kwargs))
        key = (fn, reach, str(specialization), str(options))
        if key in _CHECKED:
            return _CHECKED[key]
        options, signature, constexprs, attrs = jit._pack_args(backend, _options(kwargs), bound, specialization,
                                                               options)
        problem = None
        context = _context(backend)  # outlives the module made in it
        try:
            module = _to_ttir(jit, signature, constexprs, attrs, options, backend, target, context)
        except CompilationError as exc:
            problem = _message(exc)
            if _removed_here(exc):
                problem = f"{NOT_IN_THIS_TRITON} ({_version()}): {problem}"
        else:
            problem = _threads_problem(options, target) or _resource_problem(module, backend, options, target)
        _CHECKED[key] = problem
        return problem
    except Exception as exc:  # noqa: BLE001 - whatever the front end cannot be shown is not judged on the CPU
        return (f"the GPU front end could not be shown this launch ({type(exc).__name__}: {str(exc)[:200]}); "
                "a kernel no GPU compiler accepted is not judged on the CPU")


def out_of_shared_memory(fn: Any, args: tuple, kwargs: dict) -> bool:
    """Whether a GPU would refuse the launch only for the shared memory it needs (``frontend_problem``'s verdict,
    kept: the launch that follows with the same arguments is not checked again)."""
    problem = frontend_problem(fn, args, kwargs)
    return problem is not None and problem.startswith(OUT_OF_SHARED_MEMORY)


def _helper(value: Any) -> bool:
    """A jit function handed to a kernel (a ``constexpr`` argument, as Triton allows): its reach is the kernel's."""
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(value, InterpretedFunction) and isinstance(getattr(value, "fn", None), types.FunctionType)


def _as_jit(value: Any) -> Any:
    """A jit function argument as the GPU front end sees it."""
    return _jit_function(value.fn) if _helper(value) else value


def kernel_reach(fn: Any) -> tuple:
    """What ``fn`` can read besides its arguments, as identities: each global, builtin and closure cell its code
    names, its defaults, the attributes its code names of the modules among them (and of modules reached so), a
    ``constexpr``'s value, and the same for the Python function behind each jit helper (Triton's own aside: only
    their identity). Two launches with equal reaches run the same kernel."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    found: list = []
    todo, done = [fn], set()
    while todo:
        f = todo.pop()
        if id(f) in done:
            continue
        done.add(id(f))
        code = f.__code__
        names = _names(code)
        scope, builtins = f.__globals__, f.__globals__.get("__builtins__", {})
        builtins = getattr(builtins, "__dict__", builtins)
        values = [(n, scope.get(n, builtins.get(n, _MISSING))) for n in names]
        values += [(n, _cell(c)) for n, c in zip(code.co_freevars, f.__closure__ or ())]
        found += [id(code), id(f.__defaults__), id(f.__kwdefaults__)]
        modules: list = []
        for name, value in values:
            found.append((name, id(value)))
            if isinstance(value, types.ModuleType):
                modules.append(value)
            elif isinstance(value, (InterpretedFunction, JITFunction)):
                inner = getattr(value, "fn", None)
                found.append(id(inner))
                if isinstance(inner, types.FunctionType) and not inner.__module__.startswith("triton."):
                    todo.append(inner)
            elif hasattr(value, "value") and type(value).__name__ == "constexpr":
                found.append(repr(value.value))
        seen_modules: set = set()
        while modules:
            module = modules.pop()
            if id(module) in seen_modules:
                continue
            seen_modules.add(id(module))
            for name in names:
                value = module.__dict__.get(name, _MISSING)
                found.append((id(module), name, id(value)))
                if isinstance(value, types.ModuleType):
                    modules.append(value)
                elif isinstance(value, (InterpretedFunction, JITFunction)):
                    inner = getattr(value, "fn", None)
                    found.append(id(inner))
                    if isinstance(inner, types.FunctionType) and not inner.__module__.startswith("triton."):
                        todo.append(inner)
    return tuple(found)


def _names(code: Any) -> tuple[str, ...]:
    names = _NAMES.get(code)
    if names is None:
        found, todo = set(), [code]
        while todo:
            c = todo.pop()
            found.update(c.co_names)
            found.update(c.co_freevars)
            todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        names = _NAMES[code] = tuple(sorted(found))
    return names


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def _options(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}


def _binder(fn: Any, reach: tuple) -> tuple[Any, int, Any, Any, Any]:
    from triton.runtime import driver

    _teach_codegen()
    jit = _jit_function(fn, reach)
    device = driver.active.get_current_device()
    _, _, target, backend, binder = jit.device_caches[device]
    return jit, device, binder, backend, target


def _jit_function(fn: Any, reach: tuple | None = None) -> Any:
    """The ``JITFunction`` of the Python function ``fn`` as its globals are now (made again when its reach
    changed), its jit helpers made ``JITFunction``s too."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    reach = kernel_reach(fn) if reach is None else reach
    found = _JIT.get(fn)
    if found is not None and found[0] == reach:
        return found[1]
    scope = dict(fn.__globals__)
    clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__, clone.__qualname__, clone.__module__ = fn.__kwdefaults__, fn.__qualname__, fn.__module__
    clone.__annotations__ = dict(fn.__annotations__)
    jit = JITFunction(clone)
    _JIT[fn] = (reach, jit)
    for name, value in fn.__globals__.items():
        if isinstance(value, InterpretedFunction) and isinstance(getattr(value, "fn", None), types.FunctionType):
            scope[name] = _jit_function(value.fn)
    return jit


def _teach_codegen() -> None:
    """The code generator's attribute lookup turns an ``InterpretedFunction`` into its ``JITFunction``."""
    from triton.compiler import code_generator as codegen
    from triton.runtime.interpreter import InterpretedFunction

    original = codegen.CodeGenerator.get_Attribute
    if getattr(original, "_tritonrl_frontend", False):
        return

    def get_Attribute(self, lhs, attr):  # noqa: N802 - Triton's name
        value = original(self, lhs, attr)
        if isinstance(value, InterpretedFunction) and isinstance(getattr(value, "fn", None), types.FunctionType):
            jit = _jit_function(value.fn)
            return codegen.BoundJITMethod(lhs, jit) if codegen._is_triton_value(lhs) else jit
        return value

    get_Attribute._tritonrl_frontend = True
    codegen.CodeGenerator.get_Attribute = get_Attribute


def _context(backend: Any) -> Any:
    from triton._C.libtriton import ir

    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    return context


def _to_ttir(jit: Any, signature: dict, constexprs: dict, attrs: dict, options: Any, backend: Any,
             target: Any, context: Any) -> Any:
    from triton.compiler.compiler import ASTSource

    src = ASTSource(jit, signature, constexprs, attrs)
    return src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                       context)


def _threads_problem(options: Any, target: Any) -> str | None:
    """Why a GPU would refuse to launch a block of ``num_warps`` warps (more threads than a block may have: the
    thirty-first red team's ``num_warps=64``, which the backend compiles and the interpreter ignores), else None."""
    threads = options.num_warps * GPU_PROPERTIES["warpSize"]
    if threads <= MAX_THREADS_PER_BLOCK:
        return None
    return (f"{OUT_OF_THREADS}, Required: {threads}, Hardware limit: {MAX_THREADS_PER_BLOCK} (num_warps="
            f"{options.num_warps} x {GPU_PROPERTIES['warpSize']} threads a block on sm_{target.arch}; a GPU refuses "
            f"to launch it: num_warps <= {MAX_THREADS_PER_BLOCK // GPU_PROPERTIES['warpSize']})")


def _resource_problem(module: Any, backend: Any, options: Any, target: Any) -> str | None:
    """Why a GPU would refuse to load the kernel for lack of shared memory, else None: what the backend's own
    passes allocate (``shared_bytes``) against what one block may have on the judging GPU."""
    if getattr(target, "backend", None) != "cuda":
        raise FrontendUnavailable(f"no shared-memory check for a {getattr(target, 'backend', '?')} target")
    metadata: dict = {}
    module = backend.make_ttir(module, metadata, options, target.arch)  # helpers inlined, loops unrolled: ~2 ms
    bound = shared_bytes_bound(str(module), options.num_stages)
    if bound is not None and bound <= SHARED_MEMORY_LIMIT:
        return None  # it cannot need more than a block has: the backend's TTGIR passes (35-60 ms) are spared
    used = _allocated(module, backend, options, target.arch, metadata)
    if used <= SHARED_MEMORY_LIMIT:
        return None
    return (f"{OUT_OF_SHARED_MEMORY}, Required: {used}, Hardware limit: {SHARED_MEMORY_LIMIT} (per block on "
            f"sm_{target.arch}, with num_warps={options.num_warps}, num_stages={options.num_stages}; a GPU refuses "
            "to load it: smaller BLOCK sizes or num_stages)")


def shared_bytes_bound(ttir: str, num_stages: int) -> int | None:
    """An upper bound on ``shared_bytes`` read from the text of the backend's TTIR (after ``make_ttir``: helpers
    inlined, loops unrolled; about a millisecond), or None where the text has what this reading does not bound: a
    tensor type it cannot read, a call left (``noinline``), warp specialization. What the backend puts in shared
    memory is made from the kernel's tensors: the software pipeliner's buffers of a loaded tile (at most ``S`` each,
    ``S`` the larger of the kernel's ``num_stages`` and any loop's own, ``tl.range(num_stages=...)``), a
    ``tl.dot``'s operands, and one operation's scratch at a time (a layout conversion, a reduction, a scan, a
    transpose), no larger than a tensor with its padding. So: ``S`` x (every load's tile + every dot's operands and
    result) + 4 x the largest tensor (a tensor of pointers counted at 8 bytes an element). Against the backend's own
    figure, with pointers aligned as a launch marks them (loads pipelined), it was 2.5x or more over 648 GEMMs (loops'
    own stages, inlined helper chains, unrolling), 4.1x over 432 fp16/bf16 tilings, 9x over 392 scratch-heavy
    kernels (``test_frontend.py`` keeps a sample; docs/verifier.md). Read before ``make_ttir`` with the kernel's
    stages it missed unrolled loads, inlined helpers and loops' own stage counts (a red team's GEMM: bound 94 KB,
    real 459 KB; ``f51_c3_gemm_loop_hints_shared_memory``)."""
    if "tt.call" in ttir or "warp_specialize" in ttir or "loop_unroll_factor" in ttir:
        return None
    stages = max([max(1, num_stages)] + [int(n) for n in _LOOP_STAGES.findall(ttir)])
    largest = loaded = dotted = 0
    for line in ttir.splitlines():
        if "tensor<" not in line:
            continue
        found = _TENSOR_TYPE.findall(line)
        if len(found) != line.count("tensor<"):
            return None  # a type this reading does not know: the backend's passes decide
        sizes, pointees = [], []
        for dims, element in found:
            numel = math.prod(int(d) for d in dims.split("x") if d)
            sizes.append(numel * _element_bytes(element))
            pointees.append(numel * _element_bytes(element.removeprefix("!tt.ptr<")))
        largest = max(largest, *sizes)
        op = _OP_NAME.search(line)
        name = op.group(1) if op else ""
        if "load" in name or "gather" in name:
            loaded += pointees[-1]  # the values a load of these pointers brings (its text names the pointers)
        elif name.startswith("tt.dot"):
            dotted += sum(sizes)
    return stages * (loaded + dotted) + 4 * largest


def _element_bytes(element: str) -> int:
    """Bytes of one element of a TTIR type name: a pointer 8, ``f32`` 4, ``bf16`` 2, ``i1`` and ``f8E4M3FN`` 1."""
    bits = _DIGITS.search(element)
    return 8 if element.startswith("!tt.ptr") or bits is None else max(1, int(bits.group()) // 8)


def shared_bytes(module: Any, backend: Any, options: Any, capability: int) -> int:
    """Shared memory (bytes) one program of the TTIR ``module`` takes on a CUDA GPU of ``capability``: the
    backend's TTIR and TTGIR stages (layouts, software pipelining with ``num_stages`` buffers of each pipelined
    load), then the first passes of its LLVM stage, up to and including the shared-memory allocation, which sets
    ``ttg.shared`` (what a GPU compile reports as ``metadata.shared``). The rest of that stage (the lowering to LLVM,
    35 s for a 256x256x512 fp32 GEMM) is not run. Triton 3.6 and 3.9 alike (``test_frontend.py`` compares the
    figure with their whole compile's).
    Runs on a machine without a GPU: passes only, no ``ptxas`` (the PTX version is ``PTX_VERSION``'s)."""
    metadata: dict = {}
    return _allocated(backend.make_ttir(module, metadata, options, capability), backend, options, capability, metadata)


def _allocated(module: Any, backend: Any, options: Any, capability: int, metadata: dict) -> int:
    """``shared_bytes`` of a module already through ``make_ttir``: the TTGIR stage and the allocation."""
    from triton._C.libtriton import ir, nvidia, passes

    module = backend.make_ttgir(module, metadata, options, capability)
    pm = ir.pass_manager(module.context)
    passes.ttgpuir.add_combine_tensor_select_and_if(pm)
    try:
        passes.ttgpuir.add_allocate_warp_groups(pm, False)  # Triton 3.9: (pm, consan)
    except TypeError:
        passes.ttgpuir.add_allocate_warp_groups(pm)  # Triton 3.6
    passes.convert.add_scf_to_cf(pm)
    passes.gluon.add_inliner(pm)
    nvidia.passes.ttgpuir.add_allocate_shared_memory_nv(pm, capability, options.ptx_version or PTX_VERSION)
    pm.run(module, "tritonrl_shared_memory")
    return int(module.get_int_attr("ttg.shared") or 0)


def _removed_here(exc: BaseException) -> bool:
    """Whether the compile failed on a ``NotImplementedError`` raised in the installed Triton's own code (the API is
    gone from this version, as ``tl.make_block_ptr`` is from 3.7), not on anything of the candidate's."""
    import triton

    home = os.path.dirname(os.path.realpath(triton.__file__)) + os.sep
    first = next((e for e in exception_chain(exc) if isinstance(e, NotImplementedError)), None)
    frames = traceback.extract_tb(first.__traceback__) if first is not None else []
    return bool(frames) and os.path.realpath(frames[-1].filename).startswith(home)


def _version() -> str:
    import triton

    return f"Triton {getattr(triton, '__version__', '?')} here"


def _message(exc: Exception) -> str:
    """The compiler's error, short: its last line (the error itself) and the source line it points at."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    pointer = next((lines[i - 1].strip() for i, line in enumerate(lines) if line.strip() == "^" and i), "")
    said = [line for line in lines if line.strip() != "^"]
    inner = exc  # an error inside a jit helper is the cause of the kernel's: its own message says what
    while inner.__cause__ is not None and getattr(inner.__cause__, "error_message", None) is not None:
        inner = inner.__cause__
    last = str(inner.error_message) if inner is not exc else said[-1].strip() if said else type(exc).__name__
    return f"{last[:300]}" + (f" (at `{pointer[:120]}`)" if pointer else "")
