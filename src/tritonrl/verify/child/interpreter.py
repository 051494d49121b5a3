"""Run honest GPU-written Triton under the CPU interpreter (``TRITON_INTERPRET=1``), or say it cannot be judged.

Called in the candidate's child only (``tritonrl.verify.child.harness``), before the candidate is imported, when
the child runs under the interpreter. Every shim keeps what a kernel computes; none can turn a wrong kernel
right (the comparison happens in the parent as always). What the shims cannot make work is recognised by
``classify_interpreter_error`` so the verifier reports ``cpu_unsupported`` instead of a wrong answer.

Shims (each feature-detected; a missing hook on another triton version is skipped and reported):

* **driver**: with no GPU driver, ``triton.runtime.driver.active`` raises "0 active drivers". We install a
  CPU driver: ``get_active_torch_device()`` is ``cpu``, ``get_current_device()`` 0, and queries that only
  choose launch sizes (``utils.get_device_properties``, ``get_device_capability``, ``get_current_target``)
  answer as the judging GPU (an H100, sm_90) would, so a candidate takes the code path it takes there, except for
  the multiprocessor count: ``CPU_MULTIPROCESSORS`` (8), as few as the CPU's shapes are small.
* **autotune**: a GPU's autotuner runs every config of a tuning round on the launch's own arguments and keeps
  the fastest, the one that skips work first. Here Triton's own ``Autotuner.run`` goes first (its benchmark,
  ``_ranked_bench``, runs nothing: the configs rank in the order asked, rotated once per tuning round, skipping a
  config a GPU would refuse for its shared memory), then every other config runs on the same arguments and must
  leave what the kept one did (``_compared``, ``ConfigsDisagree``, flag ``output_mismatch``), on each launch whose
  signature or read bytes are new for the kernel, whatever the autotuner's ``key``: the kernel's inputs (what the
  kept run loaded) as given, its outputs overwritten with NaN, so skipped work and accumulation without
  ``reset_to_zero`` show. The kept run's result is restored after.
* **libdevice**: ``tl.extra.cuda.libdevice.*``, ``triton.language.extra.libdevice.*`` (the stubs the GPU
  compiler maps to the backend's libdevice) and ``from triton.language.extra import libdevice``: the
  backend's own functions are called with the interpreter's semantic, so argument types are checked and
  promoted exactly as when compiling (an fp16 argument libdevice has no entry for still fails); the extern
  call is then computed with numpy (``LIBDEVICE_NUMPY``), in float64 for float32 arguments, rounded once (the
  float32 ``fast_*`` functions faithfully, as a GPU's approximate instructions: ``ptx.faithful``).
  A function without a numpy mapping raises ``InterpreterUnsupported`` (-> ``cpu_unsupported``).
* **inline PTX**: ``tl.inline_asm_elementwise`` with ``pack=1``, 32-bit registers and straight-line PTX over
  ``$N`` operands runs element by element (``tritonrl.verify.child.ptx``: moves, float arithmetic and the
  approximate functions with ``.ftz``/``.sat``, integer and bit operations, ``cvt`` between float32 and 32-bit
  integers, declared registers, ``setp``/``selp`` and ``@p`` guards); any other assembly (special registers such
  as ``%smid``, labels and branches) raises ``InterpreterUnsupported``.
* **torch.cuda** (only while CUDA is unavailable): ``synchronize`` is a no-op (CPU work is synchronous),
  ``torch.cuda.device(<cpu device or None>)`` is a no-op context, ``current_device()`` is 0,
  ``get_device_properties``/``get_device_capability``/``get_device_name`` describe the judging GPU.
  ``torch.cuda.is_available()`` stays False: a candidate's own CPU branch is its own business. Moving data to
  CUDA (``x.cuda()``, ``device="cuda"``) still fails and is classified ``cpu_unsupported``.
* **scalar index**: triton 3.6's interpreter turns a runtime scalar (a one-element array) into a Python int with
  ``int(array)``, which numpy 2.4 and later refuse for arrays of one dimension, so ``for k in range(0, K, BLOCK)``
  over a kernel argument ``K`` raised ``TypeError`` (every GEMM reference on the GPU hosts' stack, triton 3.6 with
  numpy 2.5, was rejected: study two's calibration found it). Triton 3.9 squeezes first; so do we, on any version.
* **comparison masks**: the interpreter labels a comparison's result with its operands' type (``pid * B < n`` is an
  int32 handle holding bools), so broadcasting that scalar to a block made an int32 array, and a mask combining it
  with a block's (``(offs < n) & (pid * B < n)``) was int32: triton 3.9's load and store refuse it (``mask has
  unsupported dtype``; 3.6 took it), though the GPU front end types it ``int1``, as every comparison. A result of
  bools is labelled ``int1`` here too; the values are untouched.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import traceback
import types
from collections.abc import Callable
from typing import Any

# What the judging GPU (NVIDIA H100 SXM, sm_90) reports; only launch sizes and code-path choices depend on it.
# The judging GPU's (an H100's), but for its multiprocessors: the CPU's trials are a small fraction of the GPU's
# shapes (33 rows where the GPU's have thousands), so it reports few, as many rows to a program as the GPU's shapes
# give. A kernel whose grid is the SM count must loop over the rest on every trial: with 132, a softmax capped at
# min(rows, SMs) programs and no loop over rows was right on every CPU trial and leaves rows 132 and up unwritten
# on a GPU (the thirty-fifth red team's a16).
CPU_MULTIPROCESSORS = 8
GPU_PROPERTIES = {
    "max_shared_mem": 232448,
    "max_num_regs": 65536,
    "multiprocessor_count": CPU_MULTIPROCESSORS,
    "warpSize": 32,
    "sm_clock_rate": 1980000,
    "mem_clock_rate": 2619000,
    "mem_bus_width": 5120,
}
GPU_CAPABILITY = (9, 0)
GPU_NAME = "NVIDIA H100 80GB HBM3"


class InterpreterUnsupported(NotImplementedError):
    """A construct the CPU interpreter (with our shims) cannot run; the candidate is not judged wrong for it."""

    def __init__(self, construct: str, detail: str = "") -> None:
        self.construct = construct
        self.detail = detail
        super().__init__(f"{construct} cannot run under the Triton CPU interpreter" + (f": {detail}" if detail else ""))


# ----------------------------------------------------------------------------------------------- libdevice
def _ptx():
    from tritonrl.verify.child import ptx

    return ptx


def _vec(fn: Callable[..., float]) -> Callable:
    import numpy as np

    return np.vectorize(fn, otypes=[np.float64])


def _libdevice_table() -> dict[str, Callable]:
    """Python name in ``triton.language.extra.cuda.libdevice`` -> numpy function (float64 in, float64 out)."""
    import numpy as np

    def round_half_away(x):
        return np.sign(x) * np.floor(np.abs(x) + 0.5)

    def fdim(x, y):
        return np.where(x > y, x - y, 0.0)

    unary = {
        "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
        "nearbyint": np.rint, "round": round_half_away, "llrint": np.rint, "llround": round_half_away,
        "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1,
        "log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "logb": lambda x: np.floor(np.log2(np.abs(x))),
        "sqrt": np.sqrt, "sqrt_rn": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
        "rsqrt_rn": lambda x: 1.0 / np.sqrt(x), "normcdf": _vec(lambda v: 0.5 * math.erfc(-v / math.sqrt(2.0))), "cbrt": np.cbrt, "rcbrt": lambda x: 1.0 / np.cbrt(x),
        "rcp_rn": lambda x: 1.0 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
        "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
        "acosh": np.arccosh, "atanh": np.arctanh, "sinpi": lambda x: np.sin(np.pi * x),
        "cospi": lambda x: np.cos(np.pi * x), "erf": _vec(math.erf), "erfc": _vec(math.erfc),
        "lgamma": _vec(lambda v: math.lgamma(v) if v not in (0.0,) and not (v < 0 and v == int(v)) else math.inf),
        "tgamma": _vec(lambda v: math.gamma(v) if v > 0 or v != int(v) else math.nan),
        "saturatef": lambda x: np.clip(x, 0.0, 1.0), "signbit": lambda x: np.signbit(x).astype(np.int32),
        "isnan": lambda x: np.isnan(x).astype(np.int32), "isinf": lambda x: np.isinf(x).astype(np.int32),
        "finitef": lambda x: np.isfinite(x).astype(np.int32), "isfinited": lambda x: np.isfinite(x).astype(np.int32),
        "fast_expf": np.exp, "fast_exp10f": lambda x: np.power(10.0, x), "fast_logf": np.log,
        "fast_log2f": np.log2, "fast_log10f": np.log10, "fast_sinf": np.sin, "fast_cosf": np.cos,
        "fast_tanf": np.tan,
    }
    binary = {
        "pow": lambda x, y: np.power(x, y.astype(x.dtype)), "fmod": np.fmod,
        "remainder": np.vectorize(math.remainder, otypes=[np.float64]), "atan2": np.arctan2, "hypot": np.hypot,
        "fdim": fdim, "copysign": np.copysign, "nextafter": np.nextafter,
        "div_rn": np.divide, "rhypot": lambda x, y: 1.0 / np.hypot(x, y), "add_rn": np.add, "sub_rn": np.subtract, "mul_rn": np.multiply,
        "fast_dividef": lambda x, y: _ptx().approximate_div(x, y), "fast_powf": np.power, "ldexp": lambda x, e: np.ldexp(x, e.astype(np.int32)),
        "scalbn": lambda x, e: np.ldexp(x, e.astype(np.int32)),
    }
    ternary = {"fma": lambda x, y, z: x * y + z, "fma_rn": lambda x, y, z: x * y + z}
    return {**unary, **binary, **ternary}


_state = threading.local()
_LIBDEVICE_NUMPY: dict[str, Callable] | None = None


def _current_libdevice_name() -> str | None:
    stack = getattr(_state, "names", None)
    return stack[-1] if stack else None


def _extern_elementwise(self, libName, libPath, symbol, argList, retType, isPure):  # noqa: N803 - triton's names
    """The interpreter builder's ``create_extern_elementwise``: compute a libdevice call with numpy."""
    import numpy as np
    from triton.runtime.interpreter import TensorHandle, _get_np_dtype

    name = _current_libdevice_name()
    table = _LIBDEVICE_NUMPY or {}
    fn = table.get(name or "")
    if fn is None:
        raise InterpreterUnsupported(f"libdevice.{name or symbol}", f"extern function {symbol} has no numpy mapping")
    ret_scalar = getattr(retType, "scalar", retType)
    out_dtype = _get_np_dtype(ret_scalar)
    args = []
    for handle in argList:
        data = np.asarray(handle.data)
        args.append(data.astype(np.float64) if data.dtype.kind == "f" and data.dtype.itemsize < 8 else data)
    from tritonrl.verify.child.fidelity import canonical_nan, fma_f32

    with np.errstate(all="ignore"):
        if name in ("fma", "fma_rn") and np.dtype(out_dtype) == np.float32:
            result = fma_f32(*np.broadcast_arrays(*args), np)  # rounded once, as fma.rn.f32
        else:
            result = np.asarray(fn(*args))
        if name.startswith("fast_") and np.dtype(out_dtype) == np.float32:  # a GPU's approximate forms: no tell
            result = _ptx().faithful(result, *[a.astype(np.float32) for a in args], op=name)
    return TensorHandle(canonical_nan(result.astype(out_dtype), np), ret_scalar)


def _wrap_libdevice(name: str, fn: Callable, semantic: Any) -> Callable:
    """Call the backend's libdevice function with the interpreter's semantic, remembering which one it is."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        given = kwargs.pop("_semantic", None)  # the GPU front end's, when ``frontend`` compiles the kernel
        kwargs.pop("_builder", None)
        stack = getattr(_state, "names", None)
        if stack is None:
            stack = _state.names = []
        stack.append(name)
        try:
            return fn(*args, **kwargs, _semantic=semantic if given is None or given is semantic else given)
        finally:
            stack.pop()

    call._tritonrl_interp = True
    return call


def _unsupported_stub(qualname: str) -> Callable:
    def stub(*args, **kwargs):
        raise InterpreterUnsupported(qualname)

    stub._tritonrl_interp = True
    return stub


def _install_libdevice(report: dict) -> None:
    global _LIBDEVICE_NUMPY
    import importlib
    import inspect

    from triton.runtime import interpreter as interp

    semantic = getattr(interp, "interpreter_semantic", None)
    builder_cls = getattr(interp, "InterpreterBuilder", None)
    if semantic is None or builder_cls is None or not hasattr(builder_cls, "create_extern_elementwise"):
        report["libdevice"] = "skipped: this triton's interpreter has no interpreter_semantic/extern hook"
        return
    try:
        import triton.language.core as core
    except ImportError:  # pragma: no cover - triton always has it
        report["libdevice"] = "skipped: no triton.language.core"
        return
    _LIBDEVICE_NUMPY = _libdevice_table()
    if not getattr(builder_cls.create_extern_elementwise, "_tritonrl_interp", False):
        _extern_elementwise._tritonrl_interp = True
        builder_cls.create_extern_elementwise = _extern_elementwise
    wrapped: dict[str, Callable] = {}
    for backend in ("cuda", "hip"):
        try:
            mod = importlib.import_module(f"triton.language.extra.{backend}.libdevice")
        except ImportError:
            continue
        for name, member in inspect.getmembers(mod):
            if getattr(member, "_tritonrl_interp", False) or not core.is_builtin(member):
                continue
            new = _wrap_libdevice(name, member, semantic)
            setattr(mod, name, new)
            if backend == "cuda":
                wrapped[name] = new
        # other builtins of the backend package (e.g. tl.extra.cuda.smid, num_threads: inline asm) get the
        # interpreter's semantic too, so they fail with the interpreter's own inline_asm error, not a misleading one
        try:
            pkg = importlib.import_module(f"triton.language.extra.{backend}")
            for name, member in inspect.getmembers(pkg):
                if callable(member) and core.is_builtin(member) and not getattr(member, "_tritonrl_interp", False):
                    setattr(pkg, name, _wrap_libdevice(f"{backend}.{name}", member, semantic))
        except ImportError:
            pass
    try:
        stub_mod = importlib.import_module("triton.language.extra.libdevice")
    except ImportError:
        stub_mod = None
    replaced = 0
    if stub_mod is not None:
        for name, member in list(vars(stub_mod).items()):
            if not inspect.isfunction(member) or getattr(member, "_tritonrl_interp", False):
                continue
            if getattr(member, "__module__", "") != stub_mod.__name__:
                continue
            setattr(stub_mod, name, wrapped.get(name) or _unsupported_stub(f"libdevice.{name}"))
            replaced += 1
    report["libdevice"] = f"ok: {len(wrapped)} cuda functions, {replaced} stubs, {len(_LIBDEVICE_NUMPY)} numpy mappings"


def _install_inline_asm(report: dict) -> None:
    """``tl.inline_asm_elementwise`` runs the straight-line 32-bit PTX of ``tritonrl.verify.child.ptx``."""
    from triton.runtime import interpreter as interp

    from tritonrl.verify.child import ptx

    builder_cls = getattr(interp, "InterpreterBuilder", None)
    if builder_cls is None or not hasattr(builder_cls, "create_inline_asm"):
        report["inline_asm"] = "skipped: this triton's interpreter has no create_inline_asm"
        return
    builder_cls.create_inline_asm = ptx.create_inline_asm
    report["inline_asm"] = "ok: straight-line 32-bit PTX, pack=1"


# -------------------------------------------------------------------------------------------------- driver
class _Utils:
    def get_device_properties(self, device: Any = None) -> dict:
        return dict(GPU_PROPERTIES)

    def __getattr__(self, name: str) -> Any:
        raise InterpreterUnsupported(f"triton.runtime.driver.active.utils.{name}")


def _fake_benchmarker() -> Callable:
    """Ranks configs in the order asked (the first wins); runs nothing: the interpreter has no timing."""
    counter = [0]

    def do_bench(kernel_call, quantiles=None, **kwargs):
        counter[0] += 1
        value = float(counter[0])
        return [value, value, value] if quantiles is not None else value

    return do_bench


class InterpreterDriver:
    """Stands in for the GPU driver under the CPU interpreter (no GPU driver is active there)."""

    def __init__(self) -> None:
        self.utils = _Utils()
        self._benchmarker = _fake_benchmarker()

    @classmethod
    def is_active(cls) -> bool:
        return True

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        return None

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return GPU_CAPABILITY

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", GPU_CAPABILITY[0] * 10 + GPU_CAPABILITY[1], 32)

    def get_benchmarker(self) -> Callable:
        return self._benchmarker

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise InterpreterUnsupported(f"triton.runtime.driver.active.{name}")


def _install_driver(report: dict) -> None:
    try:
        from triton.runtime import driver as driver_config
    except ImportError:
        report["driver"] = "skipped: no triton.runtime.driver"
        return
    try:
        driver_config.active  # noqa: B018 - a real driver (GPU present) stays
        report["driver"] = "kept: a real driver is active"
        return
    except Exception:  # noqa: BLE001 - "0 active drivers" on a CPU machine
        pass
    new = InterpreterDriver()
    if hasattr(driver_config, "set_active"):
        driver_config.set_active(new)
        if hasattr(driver_config, "_default"):
            driver_config._default = new  # reset_active() must not bring the error back
    elif hasattr(driver_config, "_active"):
        driver_config._active = new
    else:
        report["driver"] = "skipped: unknown DriverConfig"
        return
    report["driver"] = "ok: CPU interpreter driver"


# ------------------------------------------------------------------------------------------------ autotune
def _install_autotune(report: dict) -> None:
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        report["autotune"] = "skipped: no triton.runtime.autotuner.Autotuner"
        return
    original = getattr(Autotuner, "prune_configs", None)
    if original is None or not hasattr(Autotuner, "_bench"):
        report["autotune"] = "driver benchmarker only (no prune_configs or _bench to replace)"
        return
    if getattr(original, "_tritonrl_interp", False):
        report["autotune"] = "ok (already installed)"
        return

    @functools.wraps(original)
    def prune_configs(self, *args, **kwargs):
        configs = list(original(self, *args, **kwargs))
        if len(configs) <= 1:
            return configs
        rounds = self.__dict__.get("_tritonrl_rounds", 0)
        self.__dict__["_tritonrl_rounds"] = rounds + 1
        shift = rounds % len(configs)
        return configs[shift:] + configs[:shift]

    run = Autotuner.run

    @functools.wraps(run)
    def compared_run(self, *args, **kwargs):
        from tritonrl.verify.child import probe

        if len(self.configs) <= 1 or probe.active():  # at the GPU's shape: the kept config's launch, checked
            return run(self, *args, **kwargs)
        return _compared(self, run, original, args, kwargs)

    prune_configs._tritonrl_interp = True
    Autotuner.prune_configs = prune_configs
    Autotuner.run = compared_run
    Autotuner._bench = _ranked_bench(Autotuner._bench)
    report["autotune"] = "ok: every config run and compared on each new launch; no timing, pruned configs rotated"


# Configs of one autotuned kernel must leave the same values: within half of these (the judge's own atol and rtol for
# the dtype) element by element against max(|value|, the tensor's typical magnitude), as the judge compares, and in
# relative L2: an honest kernel's configs differ in summation order only
CONFIG_RTOL = {"float64": 2e-6, "float32": 2e-4, "float16": 2e-2, "bfloat16": 3.2e-2}


class ConfigsDisagree(RuntimeError):
    """Two configs of one autotuned kernel left different values in its tensors: a GPU may keep either."""


def _compared(tuner: Any, run: Callable, prune: Callable, args: tuple, kwargs: dict) -> Any:
    """Triton's own run of an autotuned kernel (its tuning runs nothing here: ``_ranked_bench``), then every other
    config (of those the kernel's own pruning keeps) run on the same arguments and compared with the one it kept,
    on each launch whose tensors' shapes, strides and dtypes, other arguments' values, or the bytes of what the
    kernel reads are new for the kernel (not the autotuner's ``key``, which may leave shapes out, ``key=[]`` all;
    not the shapes alone, or a first launch on data of the candidate's choosing would stand for the real one).

    A GPU's autotuner keeps whichever config is fastest, and a config that skips work is the fastest, so on the CPU
    every config must compute what the kept one did (``ConfigsDisagree``, flag ``output_mismatch``). Each tensor is
    seen whole, over the memory the launch may reach through it (``_extent``: a strided view's gaps too), and
    every tensor the launch reaches counts (``aten_ops.launch_tensors``: in tuples, behind ``triton.reinterpret``
    and tensor descriptors). The tensors the kept run loaded from (recorded by ``fidelity``) are its inputs, the
    others it changed its outputs. Each other config runs with the inputs as the launch gave them and the outputs
    overwritten (NaN, or a pattern for integers), so a config that skips part of its work leaves the overwrite
    there, and one that adds into an output it does not ``reset_to_zero`` adds to it. On the kernel's first
    compared launch the kept config also runs again over what it wrote, as a GPU's benchmark repeats every config:
    an in-place update that is not idempotent needs ``restore_value``. ``restore_value`` tensors are put back by
    the autotuner's own hook. Afterwards every tensor holds what the kept run left (copied back: a same-layout
    copy keeps the kernel's provenance), so the comparison costs one run per other config and no second launch."""
    from tritonrl.verify.child import fidelity
    from tritonrl.verify.child.aten_ops import launch_tensors

    nargs = tuner.nargs = dict(zip(tuner.arg_names, args))  # as Triton's run sets it before pruning
    given = launch_tensors((args, kwargs))
    extents = [_extent(t) for t in given]
    values = [_values(e) for e in extents]
    seen = tuner.__dict__.setdefault("_tritonrl_compared", {}).setdefault(_signature((args, kwargs)), [])
    if any(_digest(values, read) == digest for read, digest in seen):
        return run(tuner, *args, **kwargs)
    configs = list(prune(tuner, kwargs))
    start = [(v, e.clone()) for v, e in zip(values, extents)]
    loads = fidelity.watch_loads()
    try:
        result = run(tuner, *args, **kwargs)
    finally:
        fidelity.watch_loads(stop=True)
    kept_config = getattr(tuner, "best_config", None) or configs[0]
    kept = (kept_config, [_values(e) for e in extents])
    done = [e.clone() for e in extents]
    read = _read_extents(extents, loads)
    names = {id(t): name for name, t in {**nargs, **kwargs}.items() if _is_tensor(t)}
    labels = [f"`{names[id(t)]}`" if id(t) in names else f"tensor {i} (in a tuple or wrapper)"
              for i, t in enumerate(given)]
    restore_ids = {id(nargs.get(name, kwargs.get(name))) for name in getattr(tuner, "restore_value", ()) or ()}
    restored = {i for i, t in enumerate(given) if id(t) in restore_ids}
    runs = [(config, False) for config in configs if config is not kept_config]
    if not tuner.__dict__.get("_tritonrl_repeated"):  # once a kernel: the kept config again, over its own writes
        tuner.__dict__["_tritonrl_repeated"] = True
        runs.insert(0, (kept_config, True))
    refused = tuner.__dict__.get("_tritonrl_refused", set())
    try:
        for config, again in runs:
            if config in refused:
                continue
            overwritten = _prepare(extents, start, kept[1], read, restored, again)
            loads = fidelity.watch_loads()
            try:
                left = _run_config(tuner, args, kwargs, nargs, config, extents)
            except Exception as exc:  # noqa: BLE001 - only the GPU's refusal for shared memory skips a config
                if not _out_of_shared_memory(exc):
                    raise
                continue
            finally:
                fidelity.watch_loads(stop=True)
            _agree(_kernel_name(tuner), labels, [v for v, _ in start], kept, (config, left), twice=again)
            if _read_extents(extents, loads) & overwritten:  # it read the overwrite: once more from the launch's
                _put_back(extents, start)  # own values (a config computing only where it finds NaN writes nothing)
                left = _run_config(tuner, args, kwargs, nargs, config, extents)
                _agree(_kernel_name(tuner), labels, [v for v, _ in start], kept, (config, left), twice=again)
    finally:
        _put_back(extents, list(zip(kept[1], done)))
    seen.append((read, _digest(values, read)))
    return result


def _extent(t: Any) -> Any:
    """A flat view of all the memory a launch handed ``t`` may reach: from its first element to its last, the
    gaps of a strided view included (the interpreter's bounds check allows them too)."""
    if not t.numel():
        return t.reshape(-1)
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return t.as_strided((last + 1,), (1,), t.storage_offset())


def _read_extents(extents: list, loads: list | None) -> set:
    """The extents a run loaded from (the addresses ``fidelity`` recorded)."""
    import numpy as np

    if not loads:
        return set()
    addresses = np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1) for a in loads])
    out = set()
    for i, e in enumerate(extents):
        lo = e.data_ptr()
        if e.numel() and np.any((addresses >= lo) & (addresses < lo + e.numel() * e.element_size())):
            out.add(i)
    return out


def _digest(values: list, read: set) -> str:
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for i in sorted(read):
        dtype, array = values[i]
        h.update(f"{i}:{dtype}:{array.shape}".encode())
        h.update(array.tobytes())
    return h.hexdigest()


def _signature(tree: Any) -> tuple:
    """What makes one launch of a kernel another for the comparison: each tensor's shape, strides and dtype, and
    every other argument's value."""
    from torch.utils._pytree import tree_flatten

    out = []
    for value in tree_flatten(tree)[0]:
        if _is_tensor(value):
            out.append(("tensor", tuple(value.shape), value.stride(), str(value.dtype)))
        else:
            base = getattr(value, "base", None)
            out.append(("wrapped", tuple(base.shape), base.stride(), str(getattr(value, "dtype", base.dtype)))
                       if _is_tensor(base) else repr(value)[:200])
    return tuple(out)


def _prepare(extents: list, start: list, done: list, read: set, restored: set, again: bool) -> set:
    """Before a run of another config: each output (what the kept run changed and did not load from) overwritten
    with NaN (a pattern for integers, the negation for booleans); each input as the launch gave it. For the kept
    config's second run, the inputs it loaded stay as its run left them (a GPU's benchmark repeats a config on the
    same tensors); ``restore_value`` tensors start as given either way (the autotuner's hook puts them back
    between a GPU's runs). The indices of the extents overwritten."""
    import torch

    overwritten = set()
    for i, (t, (values, saved), after) in enumerate(zip(extents, start, done)):
        if i in restored or (i in read and not again):
            _restore(t, (values, saved))
            continue
        if i in read or after[1].tobytes() == values[1].tobytes():
            continue
        overwritten.add(i)
        if t.dtype == torch.bool:
            t.copy_(~saved)
        elif t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        else:
            t.fill_(-0x5A5A5A5A if torch.iinfo(t.dtype).bits >= 32 else -0x5A if t.is_signed() else 0x5A)
    return overwritten


_PATTERNS = (-0x5A5A5A5A, -0x5A, 0x5A)  # what ``_prepare`` writes into integer outputs


def _put_back(tensors: list, start: list) -> None:
    for t, kept in zip(tensors, start):
        _restore(t, kept)


def _restore(t: Any, kept: tuple) -> None:
    """``t`` back to ``kept`` (its values as ``_values`` read them, and a clone), copied only where it changed."""
    values, saved = kept
    if _values(t)[1].tobytes() != values[1].tobytes():
        t.copy_(saved)


def _out_of_shared_memory(exc: BaseException) -> bool:
    from tritonrl.verify.child.frontend import OUT_OF_SHARED_MEMORY

    return any(type(e).__name__ == "InterpreterOnly" and OUT_OF_SHARED_MEMORY in str(e) for e in exception_chain(exc))


def _kernel_name(tuner: Any) -> str:
    inner = tuner.fn
    for _ in range(8):  # Heuristics and InterpretedFunction wrap the Python function
        if isinstance(inner, types.FunctionType):
            return inner.__name__
        inner = getattr(inner, "fn", None)
    return "?"


def _ranked_bench(original: Callable) -> Callable:
    """A tuning round's ranks, with no timing: the configs in the order asked (rotated per round by
    ``prune_configs``), the first that fits kept. A config that needs more shared memory than a block has
    (``frontend.out_of_shared_memory``, with the constexprs ``@triton.heuristics`` layers add) gets an infinite time
    and is remembered, as Triton's benchmark gives a config that raises ``OutOfResources`` on a GPU (an honest
    tutorial list has 128x256x64 tiles). Nothing runs here (``_compared`` runs the configs); Triton's own
    ``_bench`` is not called (a ``do_bench=`` of the candidate's could run anything)."""

    @functools.wraps(original)
    def _bench(self, *args, config, **meta):
        from tritonrl.verify.child.frontend import out_of_shared_memory

        fn, current = _kernel_function(self, args, dict(meta, **config.all_kwargs()))
        if fn is not None and out_of_shared_memory(fn, args, current):
            self.__dict__.setdefault("_tritonrl_refused", set()).add(config)
            return [math.inf, math.inf, math.inf]
        rank = self.__dict__["_tritonrl_rank"] = self.__dict__.get("_tritonrl_rank", 0) + 1
        return [float(rank)] * 3

    return _bench


def _kernel_function(tuner: Any, args: tuple, meta: dict) -> tuple[Any, dict]:
    """The Python function under an autotuner (through ``@triton.heuristics`` layers and the interpreter's
    wrapper) and the launch's constexprs with those the heuristics add; (None, meta) when there is none."""
    fn = tuner.fn
    for _ in range(8):
        if isinstance(fn, types.FunctionType):
            return fn, meta
        values = getattr(fn, "values", None)
        if isinstance(values, dict) and hasattr(fn, "arg_names"):  # a Heuristics layer
            for name, heuristic in values.items():
                meta[name] = heuristic({**dict(zip(fn.arg_names, args)), **meta})
        fn = getattr(fn, "fn", None)
    return None, meta


def _run_config(tuner: Any, args: tuple, kwargs: dict, nargs: dict, config: Any, tensors: list) -> list:
    """One run of ``config``, as Triton's benchmark makes it (the config's ``pre_hook``, then the autotuner's
    ``reset_to_zero``/``restore_value`` hooks around the launch); what it left in each tensor, read before
    ``restore_value`` puts its tensors back."""
    current = {**kwargs, **config.all_kwargs()}
    full_nargs = {**nargs, **current}  # the launch's named arguments (Triton's run leaves ``tuner.nargs`` None)
    if config.pre_hook:
        config.pre_hook(full_nargs)
    tuner.pre_hook(full_nargs)
    try:
        tuner.fn.run(*args, **current)
    except Exception as exc:  # noqa: BLE001 - handed to the post hook, as Triton's benchmark does, then raised
        try:
            tuner.post_hook(full_nargs, exception=exc)
        finally:
            raise
    left = [_values(t) for t in tensors]
    tuner.post_hook(full_nargs, exception=None)
    return left


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _values(t: Any) -> Any:
    """A copy of ``t``'s values as numpy (bf16 as float32), read without a torch op of the candidate's."""
    import numpy as np
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        bits = np.array(t.view(torch.int16).numpy(), dtype=np.int16, copy=True).astype(np.int32) << 16
        return ("bfloat16", bits.astype(np.uint32).view(np.float32))
    try:
        return (str(t.dtype).removeprefix("torch."), np.array(t.numpy(), copy=True))
    except TypeError:  # a dtype numpy has not (the float8s): its bits, compared exactly
        same_size = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        return (f"{t.dtype} bits", np.array(t.view(same_size).numpy(), copy=True))


def _agree(kernel: str, labels: list, start: list, first: tuple, other: tuple, twice: bool = False) -> None:
    """Raises ``ConfigsDisagree`` where ``other``'s config left values ``first``'s did not: where the first config
    wrote (its values differ from the start's), and wherever the other left anything but ``_prepare``'s overwrite,
    the values must agree (integers and booleans exactly; floats within the judge's band, from ``CONFIG_RTOL``,
    element by element and in L2, with the same NaNs and infinities). Where the first wrote nothing the other may leave the
    overwrite: a kernel need not write every element of a buffer."""
    import numpy as np

    (config_a, left_a), (config_b, left_b) = first, other
    for label, (dtype, s), (_, a), (_, b) in zip(labels, start, left_a, left_b):
        if a.shape != b.shape or not a.size:
            continue
        # where the first config wrote, and wherever the other left more than the overwrite: the same values
        # (elsewhere the first found its own result there already: the caching allocator's last output)
        check = (_bits(a) != _bits(s)) | ~_overwritten(b, s, dtype)
        bad = np.zeros(1, dtype=bool)
        if np.any(check):
            a_w, b_w = a[check], b[check]
            if dtype not in CONFIG_RTOL:
                bad = a_w != b_w
                worst = f"{int(np.sum(bad))} of {a_w.size} values differ"
            else:
                a64, b64 = a_w.astype(np.float64), b_w.astype(np.float64)
                finite = np.isfinite(a64) & np.isfinite(b64)
                diff = np.abs(a64 - b64)[finite]
                tol = CONFIG_RTOL[dtype] / 2  # the judge's own band for the dtype, element by element
                band = tol + tol * np.maximum(np.abs(a64[finite]), _typical(a64[finite]))
                bad = diff > band
                worst = (f"max difference {float(diff.max()) if diff.size else 0.0:.3g}, band "
                         f"{float(band[np.argmax(diff - band)]) if diff.size else 0.0:.3g}")
                norm = float(np.linalg.norm(a64[finite]))
                if diff.size and float(np.linalg.norm(diff)) > CONFIG_RTOL[dtype] / 2 * max(norm, 1e-30):
                    bad, worst = np.array([True]), (f"relative L2 difference {float(np.linalg.norm(diff)) / norm:.3g}"
                                                    if norm else "values where the other config's are zero")
                if not (np.array_equal(np.isnan(a64), np.isnan(b64))
                        and np.array_equal(np.where(np.isinf(a64), a64, 0), np.where(np.isinf(b64), b64, 0))):
                    bad, worst = np.array([True]), "NaN or infinity in one and not the other"
        if np.any(bad) and twice:
            raise ConfigsDisagree(
                f"autotuned kernel `{kernel}`: config {_config_text(config_a)} run again over what it wrote leaves "
                f"different values in {label} ({worst}); a GPU's autotuner runs every config many times on the same "
                "tensors, so an output a kernel accumulates into or changes in place needs reset_to_zero or "
                "restore_value")
        if np.any(bad):
            raise ConfigsDisagree(
                f"autotuned kernel `{kernel}`: configs {_config_text(config_a)} and {_config_text(config_b)} leave "
                f"different values in {label} ({worst}); a GPU's autotuner may keep either, so every config must "
                "compute the same, every element written")


def _typical(values: Any) -> float:
    """A tensor's typical magnitude, as the judge's comparison takes it: its RMS, at most twice its median nonzero
    magnitude (``judge.compare``)."""
    import numpy as np

    if not values.size:
        return 0.0
    rms = float(np.sqrt(np.mean(values * values)))
    nonzero = np.abs(values[values != 0])
    return min(rms, 2 * float(np.median(nonzero))) if nonzero.size else rms


def _bits(values: Any) -> Any:
    """The values' bit patterns, one unsigned integer an element (booleans as bytes)."""
    import numpy as np

    return values.view(np.uint8) if values.dtype == np.bool_ else values.view(f"u{values.dtype.itemsize}")


def _overwritten(values: Any, start: Any, dtype: str = "") -> Any:
    """Where ``values`` hold what ``_prepare`` put there in place of ``start`` (``dtype``: ``_values``' label)."""
    import numpy as np
    import torch

    if dtype.endswith(" bits"):  # a float type numpy has not: NaN's bit pattern in it
        nan = torch.full((1,), float("nan")).to(getattr(torch, dtype.split()[0].removeprefix("torch.")))
        return values == nan.view({1: torch.uint8, 2: torch.int16}[nan.element_size()]).numpy()[0]
    if values.dtype == np.bool_:
        return values != start
    if values.dtype.kind in "fc":
        return np.isnan(values)
    return np.isin(values, list(_PATTERNS))


def _config_text(config: Any) -> str:
    kwargs = ", ".join(f"{k}={v}" for k, v in config.all_kwargs().items())
    return f"({kwargs})"


# ---------------------------------------------------------------------------------------------- torch.cuda
class _FakeProps(types.SimpleNamespace):
    pass


# Torch's calls that make a tensor on a device named in their arguments: under the interpreter a CUDA device there
# is the CPU (``_install_cuda_as_cpu``)
_DEVICE_FACTORIES = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "linspace", "eye",
                     "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "empty_strided",
                     "tensor", "as_tensor")
_DEVICE_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor")


def _cpu_for_cuda(device: Any) -> Any:
    """``device`` with the judging GPU (``"cuda"``, ``"cuda:0"``, index 0, as a name, a ``torch.device`` or an
    int) made the CPU; another CUDA device raises as on the one-GPU machine that judges (the thirty-sixth red team's
    ``a03``: an output made on ``"cuda:1"``); anything else as given."""
    import torch

    if isinstance(device, int) and not isinstance(device, bool):
        index, cuda = device, True
    elif isinstance(device, (str, torch.device)):
        try:
            parsed = torch.device(device)
        except (RuntimeError, TypeError):  # not a device: the call's own error
            return device
        index, cuda = parsed.index or 0, parsed.type == "cuda"
    else:
        return device
    if not cuda:
        return device
    if index != 0:
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {index}: the judging machine shows its "
                           "candidate one GPU)")
    return "cpu"


def _install_cuda_as_cpu(report: dict) -> None:
    """GPU-written code names its device (``torch.empty(n, device="cuda")``, ``.cuda()``, ``.to("cuda")``): under
    the interpreter that device is the CPU, where every tensor of the trial is, as the judging GPU would hold them
    all. Before this such code was ``cpu_unsupported`` (not judged), and the CPU cross-check of a GPU verdict saw
    nothing of a kernel whose scratch was made with ``device="cuda"``. A forward that asks where its tensors are
    (``x.is_cuda``) still learns the truth: that is a device branch of its own."""
    import functools

    import torch

    if torch.cuda.is_available():
        report["cuda_as_cpu"] = "kept: CUDA is available"
        return
    if getattr(torch.Tensor.cuda, "_tritonrl_cpu", False):
        report["cuda_as_cpu"] = "ok: installed before"
        return

    def with_cpu(function: Any) -> Any:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if "device" in kwargs:
                kwargs["device"] = _cpu_for_cuda(kwargs["device"])
            return function(*args, **kwargs)

        return call

    for name in _DEVICE_FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, with_cpu(getattr(torch, name)))
    for name in _DEVICE_METHODS:
        if hasattr(torch.Tensor, name):
            setattr(torch.Tensor, name, with_cpu(getattr(torch.Tensor, name)))
    original_to = torch.Tensor.to

    @functools.wraps(original_to)
    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        if args and not isinstance(args[0], (torch.dtype, torch.Tensor)):
            args = (_cpu_for_cuda(args[0]), *args[1:])
        if "device" in kwargs:
            kwargs["device"] = _cpu_for_cuda(kwargs["device"])
        return original_to(self, *args, **kwargs)

    def cuda(self: Any, device: Any = None, non_blocking: bool = False, memory_format: Any = None) -> Any:
        return self if memory_format is None else self.contiguous(memory_format=memory_format)

    cuda._tritonrl_cpu = True
    torch.Tensor.to, torch.Tensor.cuda = to, cuda
    report["cuda_as_cpu"] = f"ok: {len(_DEVICE_FACTORIES) + len(_DEVICE_METHODS) + 2} calls"


def _install_torch_cuda(report: dict) -> None:
    import torch

    if torch.cuda.is_available():
        report["torch_cuda"] = "kept: CUDA is available"
        return
    cuda = torch.cuda
    props = _FakeProps(
        name=GPU_NAME, major=GPU_CAPABILITY[0], minor=GPU_CAPABILITY[1], total_memory=80 * 1024**3,
        multi_processor_count=GPU_PROPERTIES["multiprocessor_count"], warp_size=32,
        max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
        shared_memory_per_block=49152, shared_memory_per_block_optin=GPU_PROPERTIES["max_shared_mem"],
        shared_memory_per_multiprocessor=233472, L2_cache_size=50 * 1024**2, is_integrated=False,
    )
    original_device = cuda.device

    class device(original_device):  # noqa: N801 - replaces torch.cuda.device
        def __init__(self, dev: Any) -> None:
            self._tritonrl_noop = dev is None or (isinstance(dev, int) and dev < 0) or (
                isinstance(dev, (str, torch.device)) and torch.device(dev).type != "cuda")
            if self._tritonrl_noop:
                self.idx = -1
                self.prev_idx = -1
            else:
                super().__init__(dev)

        def __enter__(self):
            return None if self._tritonrl_noop else super().__enter__()

        def __exit__(self, *exc: Any):
            return False if self._tritonrl_noop else super().__exit__(*exc)

    def synchronize(device: Any = None) -> None:
        return None

    replacements = {
        "synchronize": synchronize,
        "current_device": lambda: 0,
        "device": device,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: GPU_CAPABILITY,
        "get_device_name": lambda device=None: GPU_NAME,
    }
    for name, value in replacements.items():
        if hasattr(cuda, name):
            setattr(cuda, name, value)
    report["torch_cuda"] = "ok: " + ", ".join(sorted(replacements))


def _install_scalar_index(report: dict) -> None:
    """A runtime scalar's ``__index__`` squeezes its one-element array first (module docstring)."""
    from triton.runtime import interpreter as interp

    original = getattr(interp, "_patch_lang_tensor", None)
    if original is None:
        report["scalar_index"] = "skipped: no _patch_lang_tensor in this triton"
        return
    if getattr(original, "_tritonrl_scalar_index", False):
        report["scalar_index"] = "ok (already installed)"
        return

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        # the scope restores in reverse order, so this patch is undone before triton's own
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patch_lang_tensor._tritonrl_scalar_index = True
    interp._patch_lang_tensor = patch_lang_tensor
    report["scalar_index"] = "ok"


def _install_compare_int1(report: dict) -> None:
    """A comparison's handle is ``int1`` (module docstring): each of the builder's comparisons (``create_icmp*``,
    ``create_fcmp*``) relabels its result; other ops pay nothing (a wrapper on every binary op cost 7% of a
    forward under the interpreter)."""
    import triton.language as tl
    from triton.runtime import interpreter as interp

    builder = getattr(interp, "InterpreterBuilder", None)
    names = [n for n in dir(builder) if n.startswith(("create_icmp", "create_fcmp"))] if builder else []
    if not names:
        report["compare_int1"] = "skipped: no comparisons on InterpreterBuilder in this triton"
        return
    if getattr(getattr(builder, names[0]), "_tritonrl_compare_int1", False):
        report["compare_int1"] = "ok (already installed)"
        return
    handle, int1 = interp.TensorHandle, tl.int1

    def relabelled(original: Callable) -> Callable:
        def compare(self, lhs, rhs):
            out = original(self, lhs, rhs)
            return out if out.dtype == int1 else handle(out.data, int1)

        compare._tritonrl_compare_int1 = True
        return compare

    for name in names:
        setattr(builder, name, relabelled(getattr(builder, name)))
    report["compare_int1"] = f"ok: {len(names)} comparisons"


# ------------------------------------------------------------------------------------------- entry points
def is_interpreter() -> bool:
    import os

    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def install_interpreter_compat() -> dict[str, str]:
    """Install every shim (idempotent). Call in the child, after torch/triton import, before the candidate's.

    Returns what was installed, one short line per shim (for the child's log / sandbox.json).
    """
    report: dict[str, str] = {}
    if not is_interpreter():
        return {"skipped": "TRITON_INTERPRET is not set"}
    from tritonrl.verify.child import fidelity

    for name, install in (("driver", _install_driver), ("autotune", _install_autotune),
                          ("libdevice", _install_libdevice), ("torch_cuda", _install_torch_cuda),
                          ("scalar_index", _install_scalar_index), ("compare_int1", _install_compare_int1),
                          ("cuda_as_cpu", _install_cuda_as_cpu), ("inline_asm", _install_inline_asm),
                          ("fidelity", fidelity.install)):
        try:
            install(report)
        except Exception as exc:  # noqa: BLE001 - a shim that cannot install leaves the construct unsupported
            report[name] = f"failed: {type(exc).__name__}: {exc}"[:200]
    return report


_CUDA_MISSING = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "CUDA driver initialization failed",
    "Expected a cuda device, but got: cpu",
    "Cannot access accelerator device when none is available",
)
_INTERP_NOT_IMPLEMENTED = re.compile(r"(\w+) not supported in interpreter mode")


def exception_chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, innermost last (at most 20, no cycle)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen and len(seen) < 20:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


_LIBRARY_PATHS = ("/triton/", "/torch/", "/tritonrl/verify/child/interpreter.py", "/tritonrl/verify/child/fidelity.py",
                  "/tritonrl/verify/child/ptx.py")


def _raised_by_library(exc: BaseException) -> bool:
    """The innermost frame is Triton's, torch's or our shims' code, not the candidate's own ``raise``."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and any(p in frames[-1].filename.replace("\\", "/") for p in _LIBRARY_PATHS)


def _candidate_line(exc: BaseException, code_text: str) -> str:
    """The last traceback line that is the candidate's own (its text matches the code), for the reason."""
    lines = code_text.splitlines()
    found = ""
    for e in exception_chain(exc):
        for frame in traceback.extract_tb(e.__traceback__):
            if frame.lineno and 0 < frame.lineno <= len(lines) and frame.line \
                    and lines[frame.lineno - 1].strip() == frame.line.strip() and "site-packages" not in frame.filename:
                found = f" (line {frame.lineno}: {frame.line.strip()[:80]})"
    return found


def classify_interpreter_error(exc: BaseException, code_text: str) -> str | None:
    """A short reason when ``exc`` comes from a CPU-interpreter limitation (-> ``cpu_unsupported``), else None.

    Recognised: our shims' ``InterpreterUnsupported``; the interpreter's own "... not supported in interpreter
    mode" (extern_elementwise, inline_asm); no GPU driver ("0 active drivers", for queries the shims do not
    cover or when they were not installed); torch's CUDA-missing errors (``x.cuda()``, ``device="cuda"``,
    ``torch.cuda.current_stream()``) raised while CUDA is unavailable. Only exceptions raised inside Triton,
    torch or these shims count: a candidate's own ``raise``/``assert`` with the same message is not. Anything else (IndexError, shape errors,
    an AttributeError for a function Triton does not have, a host-side call of a tl builtin) is None: the
    candidate's own fault, judged as usual.
    """
    where = _candidate_line(exc, code_text)
    for e in exception_chain(exc):
        if not _raised_by_library(e):
            continue  # a candidate raising the same message itself is its own error, not the interpreter's
        if isinstance(e, InterpreterUnsupported):
            return f"{e.construct} is not supported by the CPU interpreter{where}" + (f": {e.detail}" if e.detail else "")
        msg = str(e)
        if isinstance(e, NotImplementedError):
            m = _INTERP_NOT_IMPLEMENTED.search(msg)
            if m:
                construct = {"extern_elementwise": "libdevice/extern_elementwise",
                             "inline_asm": "tl.inline_asm_elementwise"}.get(m.group(1), m.group(1))
                return f"{construct} is not supported by the CPU interpreter{where}"
        if isinstance(e, ValueError) and re.search(r"`_(semantic|builder)` argument must be provided", msg) \
                and _LIBDEVICE_NUMPY is None and re.search(r"libdevice|\bextra\.", where):
            return f"libdevice/backend extern (interpreter shim not installed){where}"
        if isinstance(e, TypeError) and "cannot convert None of type" in msg and _LIBDEVICE_NUMPY is None \
                and "libdevice" in code_text:
            return f"libdevice stub (interpreter shim not installed){where}"
        if isinstance(e, RuntimeError) and re.search(r"\b0 active drivers\b", msg):
            return f"triton driver query (no GPU driver under the CPU interpreter){where}"
        if isinstance(e, (AssertionError, RuntimeError, ValueError)) and any(s in msg for s in _CUDA_MISSING):
            try:
                import torch

                if torch.cuda.is_available():
                    return None
            except ImportError:  # pragma: no cover
                pass
            return f"CUDA device required (this machine has none){where}"
    return None
