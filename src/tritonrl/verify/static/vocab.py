"""The names the static checks share: what may be imported, what computes, what reaches files, processes or the
harness. Pure data and two small predicates over torch's API (no analysis state); every check module imports from
here, and from nothing else of its siblings' but the shared analysis (``scope``, ``kinds``, ``names``)."""

from __future__ import annotations

import functools

from tritonrl.verify.static.facts import remembered

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
SYS_ALLOWED = frozenset({"sys.maxsize", "sys.version_info", "sys.version", "sys.platform", "sys.float_info",
    "sys.byteorder", "sys.stdout", "sys.stderr", "sys.getrecursionlimit", "sys.exit"})
DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "__builtins__", "exec", "eval", "compile",
    "breakpoint"})
INTROSPECTION_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "gi_frame",
    "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code", "ag_await", "tb_frame",
    "tb_next", "__globals__", "__code__", "__closure__", "__subclasses__", "__mro__", "__bases__", "__base__",
    "__builtins__", "__dict__", "__loader__", "__spec__", "__getattribute__", "__traceback__", "__self__",
    "__func__", "__wrapped__", "__reduce__", "__reduce_ex__", "__objclass__", "__defaults__", "__kwdefaults__"})
# Names that only introspection or the harness's internals need: as a string value anywhere (a constant
# getattr, a dict key, a variable holding a name) they are the same as the attribute (the "values" spelling).
TAMPERING_STRINGS = INTROSPECTION_ATTRS | frozenset({"modules", "_getframe", "_current_frames", "settrace",
    "setprofile", "addaudithook", "__import__", "_disable_current_modes", "_python_dispatch", "get_referrers",
    "get_referents", "get_objects", "in_launch", "candidate_in_launch", "cell_contents"})
# The same names met as words inside a longer string: a field path of a format string ("{0.f_back}",
# ``string.Formatter().get_field("0.__init__.__globals__")``) reads them as attributes. "modules" is a common word.
TAMPERING_FIELDS = TAMPERING_STRINGS - {"modules"}
GLOBAL_STATE_CALLS = frozenset({"torch.manual_seed", "torch.seed", "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all", "torch.random.manual_seed", "torch.set_rng_state",
    "torch.cuda.set_rng_state", "random.seed", "numpy.random.seed", "torch.set_default_dtype",
    "torch.set_default_tensor_type", "torch.set_default_device", "torch.set_float32_matmul_precision",
    "torch.use_deterministic_algorithms", "torch.set_flush_denormal"})
# The harness's own settings, which differ between the watched calls and the timed ones (deterministic mode fills
# fresh memory with a poison while the watch runs): read, they tell a candidate which calls are timed.
HARNESS_SETTINGS = frozenset({"torch.utils.deterministic", "torch.are_deterministic_algorithms_enabled",
    "torch.is_deterministic_algorithms_warn_only_enabled", "torch.get_deterministic_debug_mode"})
SIDE_STREAMS = frozenset({"torch.cuda.current_stream", "torch.cuda.default_stream",
    "torch.cuda.get_stream_from_external", "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream",
    "torch.cuda.StreamContext", "torch.cuda.ExternalStream", "torch.Stream", "torch.cuda.streams",
    "torch.cuda.graph", "torch.cuda.CUDAGraph"})
# fmt: on

# fmt: off
FILE_MODULES = frozenset({"io", "_io", "pathlib", "shutil", "glob", "tempfile", "mmap", "fileinput", "filecmp",
    "linecache", "tarfile", "zipfile", "gzip", "bz2", "lzma", "shelve", "dbm", "sqlite3", "posix", "nt",
    "fcntl", "posixpath", "ntpath", "genericpath", "fnmatch", "zipimport", "pkgutil", "codecs"})
OS_ALLOWED = frozenset({"os.environ", "os.environ.get", "os.getenv", "os.cpu_count", "os.getpid", "os.sep",
    "os.name", "os.linesep", "os.path", "os.path.join", "os.path.basename", "os.path.dirname",
    "os.path.split", "os.path.splitext", "os.path.normpath", "os.path.isabs", "os.path.sep"})
FILE_QUALNAMES = ("numpy.load", "numpy.save", "numpy.savez", "numpy.savetxt", "numpy.loadtxt", "numpy.genfromtxt",
    "numpy.fromfile", "numpy.memmap", "numpy.fromregex", "numpy.DataSource", "numpy.lib.format",
    "numpy.lib.npyio", "numpy.lib.format.open_memmap", "numpy.ndarray.tofile", "numpy.ndarray.dump",
    "torch.load", "torch.save", "torch.from_file", "torch.serialization", "torch.hub", "torch.package",
    "torch.utils.model_zoo", "torch.utils.tensorboard", "torch.jit.load", "torch.jit.save", "torch.profiler",
    "torch.autograd.profiler", "torch.cuda.memory._dump_snapshot", "triton.runtime.cache", "triton.tools.compile",
    "triton.tools.link", "triton.tools.disasm", "triton.tools.build_extern", "triton.tools.mxfp")
FILE_METHODS = frozenset({"tofile", "fromfile", "from_file", "memmap", "open_memmap", "read_bytes",
    "write_bytes", "read_text", "write_text", "iterdir", "rglob", "unlink", "rmdir", "mkdir", "makedirs",
    "touch", "symlink_to", "hardlink_to", "readlink", "chmod", "is_file", "is_dir", "samefile", "dump",
    "export_chrome_trace", "export_stacks", "export_memory_timeline", "load_state_dict_from_url",
    "download_url_to_file", "savez", "savetxt", "loadtxt", "fileno", "scandir", "listdir"})
# fmt: on

# fmt: off
ALLOWED_TORCH = frozenset({"empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like", "ones", "ones_like",
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
    "is_same_size", "clone"})
PERMUTING = frozenset({"t", "transpose", "permute", "movedim", "moveaxis", "swapaxes", "swapdims", "expand",
    "expand_as", "T", "mT", "mH", "H", "as_strided", "unfold"})  # views that re-arrange elements
MATERIALIZING = frozenset({"contiguous", "reshape", "flatten", "reshape_as", "clone"})
# Names common on non-tensor objects: only flagged when the receiver is known to be a tensor.
GENERIC_NAMES = frozenset({"values", "index", "add", "sort", "copy_", "name", "map_", "apply_", "set_", "data"})
_OPS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift")
ARITH_DUNDERS = frozenset(f"__{p}{op}__" for op in _OPS for p in ("", "r", "i")) | frozenset({"__neg__", "__pos__",
    "__abs__", "__invert__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__", "__getitem__",
    "__setitem__"})
BUILTIN_REDUCERS = frozenset({"abs", "sum", "pow", "round", "min", "max", "divmod"})
# numpy's ways to address raw memory: a view at any address (``as_strided`` with a stride reaching another
# allocation, the ``ndarray`` constructor over a buffer at an offset), an array's address (``byte_bounds``,
# ``.ctypes``) and ctypes itself. With them numpy reads a tensor's bytes without any export (the twenty-eighth red
# team read the input through ``as_strided`` over a one-element array, strided by ``x.data_ptr()`` minus its own).
RAW_MEMORY_QUALNAMES = ("numpy.lib.stride_tricks.as_strided", "numpy.lib.array_utils.byte_bounds",
    "numpy.byte_bounds", "numpy.ctypeslib", "numpy.ndarray.__new__", "numpy.lib.stride_tricks.DummyArray")
RAW_MEMORY_ATTRS = frozenset({"ctypes", "__array_interface__", "__array_struct__"})

# The private methods of torch's storages (``torch._C.StorageBase`` and its Python classes): raw file I/O, shared
# memory and pointer swaps that move a storage's bytes without any aten op, so no watch sees them (the
# twenty-seventh red team read inputs with ``_write_file`` into a Python object and wrote a ReLU computed in Python
# into an output with ``_set_from_file``, from a grid function inside the launch). No kernel needs one.
STORAGE_INTERNALS = frozenset({"_byteswap", "_cdata", "_expired", "_fix_weakref", "_free_weak_ref", "_get_filename",
    "_get_shared_fd", "_new_shared_cuda", "_new_shared_fd_cpu", "_new_shared_filename_cpu", "_new_using_fd_cpu",
    "_new_using_filename_cpu", "_new_with_file", "_new_with_weak_ptr", "_release_ipc_counter_cuda",
    "_resize_with_addr_", "_set_cdata", "_set_from_file", "_share_cuda_", "_share_fd_cpu_", "_share_filename_cpu_",
    "_shared_decref", "_shared_incref", "_swap_data_ptr_", "_weak_ref", "_write_file", "_new_shared",
    "_release_ipc_counter", "_share_memory_", "_from_buffer", "_new_wrapped_storage"})
# fmt: on

META_METHODS = frozenset(
    {
        "size",
        "stride",
        "numel",
        "dim",
        "ndimension",
        "nelement",
        "element_size",
        "item",
        "data_ptr",
        "storage_offset",
        "is_contiguous",
        "get_device",
        "is_floating_point",
        "is_complex",
    }
)


@functools.cache
def tensor_compute_methods() -> frozenset[str]:
    """Every public torch.Tensor method that is not layout/allocation/metadata, plus arithmetic dunders."""
    public = set(remembered("tensor_public", "", _tensor_public))
    return (
        frozenset(
            public
            - LAYOUT_METHODS
            - META_METHODS
            - {"shape", "dtype", "device", "ndim", "is_cuda", "layout", "itemsize", "nbytes", "is_leaf"}
        )
        | ARITH_DUNDERS
    )


def _tensor_public() -> list[str]:
    import torch  # lazily, and once per installed torch (tritonrl.verify.static.facts)

    return sorted(m for m in dir(torch.Tensor) if not m.startswith("_"))


def is_torch_compute_function(q: str) -> bool:
    if not q.startswith("torch.") or torch_call_allowed(q):
        return False
    return remembered("torch_compute_function", q, lambda: _is_compute_function(q))


def _is_compute_function(q: str) -> bool:
    import torch  # lazily, as in _tensor_public

    obj = torch
    for part in q.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return callable(obj) and not isinstance(obj, type)


def torch_call_allowed(q: str) -> bool:
    last = q.rsplit(".", 1)[-1]
    if q.startswith(
        ("torch.cuda.", "torch.backends.", *FOREIGN_CODE, *COMPILERS, *FILE_QUALNAMES)
    ) or q.endswith(".from_file"):
        return True  # streams, foreign code, compilers and files have their own checks
    if q in GLOBAL_STATE_CALLS:
        return True
    if q.startswith("torch.Tensor."):
        return last in LAYOUT_METHODS or last in ("shape", "dtype", "device")
    return q.count(".") == 1 and last in ALLOWED_TORCH
