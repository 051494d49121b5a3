"""A kernel judged on the CPU must be one a GPU compiler accepts (candidate child, CPU interpreter only).

Under ``TRITON_INTERPRET=1`` a kernel body runs as Python, so it can do what no GPU compiler would let it: call a
plain Python function (directly, through a dict, a list, ``getattr``), use numpy or torch, reach a block's host
array (``x.handle``, ``getattr(x, "handle")``). Reading the body's names for such uses is a check by spelling.
So before each launch the kernel goes through Triton's own front end for the judging GPU (sm_90: ``ast_to_ttir``,
the same code generator the GPU path runs, with this launch's argument types and constants): whatever it
rejects, however spelled, is ``InterpreterOnly`` (flag ``interpreter_only``, with the compiler's message). Only
the front end runs (Triton to TTIR, a few milliseconds, once per kernel and specialization); nothing is built for
a device.

Jit functions are ``InterpretedFunction``s under the interpreter (the candidate's helpers, and Triton's own
``tl.max``, ``tl.sum``, ``tl.cdiv`` ...); the front end reads the kernel through a copy of its globals in which
each is the ``JITFunction`` of the same Python function, and its code generator is taught to read one reached as
an attribute (``tl.max``) the same way. A failure of this machinery itself (not the compiler's verdict on the
kernel) lets the launch go on unchecked: the check may only ever reject what a GPU would. It is not silent: the
verdict is flagged ``frontend_unchecked`` with the reason (``UNCHECKED``).
"""

from __future__ import annotations

import types
from typing import Any

_CHECKED: dict[Any, str | None] = {}
# Why the machinery failed, for launches that went on unchecked (the verdict says so: ``frontend_unchecked``)
UNCHECKED: list[str] = []
_JIT: dict[Any, Any] = {}


class FrontendUnavailable(RuntimeError):
    """This Triton's front end could not be driven here (an API this module does not know)."""


def frontend_problem(fn: Any, args: tuple, kwargs: dict) -> str | None:
    """The GPU compiler's message if it rejects the Python kernel ``fn`` for this launch's arguments, else None."""
    try:
        from triton.compiler.errors import CompilationError

        jit, device, binder, backend, target = _binder(fn)
        bound, specialization, options = binder(*args, **_options(kwargs))
        key = (fn, str(specialization), str(options))
        if key in _CHECKED:
            return _CHECKED[key]
        options, signature, constexprs, attrs = jit._pack_args(backend, _options(kwargs), bound, specialization,
                                                               options)
        problem = None
        try:
            _to_ttir(jit, signature, constexprs, attrs, options, backend, target)
        except CompilationError as exc:
            problem = _message(exc)
        _CHECKED[key] = problem
        return problem
    except Exception as exc:  # noqa: BLE001 - our machinery, not the kernel: never a reason to reject, but said
        if len(UNCHECKED) < 4:
            UNCHECKED.append(f"{getattr(fn, '__name__', '?')}: {type(exc).__name__}: {exc}"[:300])
        return None


def _options(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}


def _binder(fn: Any) -> tuple[Any, int, Any, Any, Any]:
    from triton.runtime import driver

    _teach_codegen()
    jit = _jit_function(fn)
    device = driver.active.get_current_device()
    _, _, target, backend, binder = jit.device_caches[device]
    return jit, device, binder, backend, target


def _jit_function(fn: Any) -> Any:
    """The ``JITFunction`` of the Python function ``fn``, its jit helpers made ``JITFunction``s too."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    found = _JIT.get(fn)
    if found is not None:
        return found
    scope = dict(fn.__globals__)
    clone = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__, clone.__qualname__, clone.__module__ = fn.__kwdefaults__, fn.__qualname__, fn.__module__
    clone.__annotations__ = dict(fn.__annotations__)
    jit = _JIT[fn] = JITFunction(clone)
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


def _to_ttir(jit: Any, signature: dict, constexprs: dict, attrs: dict, options: Any, backend: Any,
             target: Any) -> Any:
    from triton._C.libtriton import ir
    from triton.compiler.compiler import ASTSource

    src = ASTSource(jit, signature, constexprs, attrs)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    return src.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                       context)


def _message(exc: Exception) -> str:
    """The compiler's error, short: its last line (the error itself) and the source line it points at."""
    lines = [line for line in str(exc).splitlines() if line.strip()]
    pointer = next((lines[i - 1].strip() for i, line in enumerate(lines) if line.strip() == "^" and i), "")
    last = lines[-1].strip() if lines else type(exc).__name__
    return f"{last[:300]}" + (f" (at `{pointer[:120]}`)" if pointer else "")
