"""The aten ops the monitor tells apart, and the tensors an op or a launch handles (candidate child).

An op either writes nothing new (metadata, views), allocates (``ALLOC_OPS``: poisoned, never "written"), points a
tensor at a storage (``REBIND_OPS``), fills constants (``FILL_OPS``), makes a tensor from Python or numpy data
(``LIFT_OPS``), copies (``COPY_OPS``), reads a value into Python (``READ_OPS``), or computes (anything else).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from tritonrl.verify.child.provenance import COPIED, ECHO, FOREIGN, INPUT, KERNEL, PARAM, RELAID, TORCH

_Tensor = torch.Tensor
try:
    from triton.tools.tensor_descriptor import TensorDescriptor as _Descriptors
except ImportError:  # an older Triton: no host-side tensor descriptors
    _Descriptors = None
try:  # what ``triton.reinterpret`` hands a launch (fp8 kernels read and write their tensors through it)
    from triton.runtime.jit import TensorWrapper as _Wrappers
except ImportError:  # pragma: no cover - older Triton
    _Wrappers = None
try:  # a constexpr global or argument: its ``value`` is what the kernel reads
    from triton.language import constexpr as Constexpr
except ImportError:  # pragma: no cover - Triton is the project's requirement
    Constexpr = None

ALLOC_OPS = frozenset({  # allocate, write no values (an empty buffer is poisoned, never "written")
    "empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided",
})
REBIND_OPS = frozenset({"set_", "resize_", "resize_as_"})  # point a tensor at a storage: new memory is UNSET, existing keeps its
FILL_OPS = frozenset({  # write values that are not a kernel's: constants, ranges
    "zeros", "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "arange", "scalar_tensor", "fill_", "zero_",
})
LIFT_OPS = frozenset({"lift_fresh", "lift_fresh_copy"})  # a tensor made from Python or numpy data
# a storage holding this call's data
CARRIES_DATA = frozenset({INPUT, PARAM, KERNEL, COPIED, TORCH, ECHO, FOREIGN, RELAID})
COPY_OPS = frozenset({"clone", "copy_", "_to_copy", "_copy_from", "_copy_from_and_resize", "contiguous"})
META_OPS = frozenset({"sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size",
                      "stride", "dim", "is_same_size", "_has_compatible_shallow_copy_type", "record_stream"})
READ_OPS = frozenset({"_local_scalar_dense"})  # a value leaves the tensor for Python (.item(), float(), bool())


def op_name(func: Any) -> str:
    return func._schema.name.split("::", 1)[-1]


def is_view(func: Any) -> bool:
    """An op whose result aliases its input and writes nothing (view, t, select, expand, as_strided, ...)."""
    schema = func._schema
    return (not schema.is_mutable and bool(schema.returns)
            and all(r.alias_info is not None for r in schema.returns))


def is_a(value: Any, kind: Any) -> bool:
    """``isinstance`` by the value's own type: never the ``__class__`` a candidate's object may claim (a property
    there is code of the candidate's, run wherever the watch looks at the object)."""
    return bool(kind) and issubclass(type(value), kind)


def tensors(tree: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(tree)[0] if is_a(t, _Tensor)]


def launch_tensors(tree: Any) -> list[torch.Tensor]:
    """The tensors a launch can write: its tensor arguments and the tensors under its tensor descriptors and
    ``triton.reinterpret`` wrappers."""
    found = []
    for value in tree_flatten(tree)[0]:
        if is_a(value, _Tensor):
            found.append(value)
        elif (is_a(value, _Descriptors) or is_a(value, _Wrappers)) and is_a(getattr(value, "base", None), _Tensor):
            found.append(value.base)  # ``triton.reinterpret(t, dtype)``: t's storage, read as another dtype
    return found
