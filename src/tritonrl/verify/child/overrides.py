"""A candidate's modules may not redefine ``nn.Module``'s own machinery.

    problem = module_overrides(model)       # None, or what was redefined (the harness refuses the candidate)
    params, buffers = module_tensors(model) # without calling any method a candidate could have replaced

The harness and the watch call a model's ``nn.Module`` methods from their own frames (``to``, ``eval``,
``parameters``, ``__call__``). A ModelNew that put a callable of its choosing in one's place (a builtin, a
``functools.partial`` of builtins: no frame of the candidate's) had it run there, where the audit hook counts what
happens as this package's doing: a red team took frames that way and muted the monitor. So a module class the
candidate defined may define, of the names ``nn.Module`` has, only ``ALLOWED``; no module may hold one of them as
an instance attribute; and the watch reads parameters and buffers from the modules' own dictionaries. Checked
after construction and around every forward (the forward may rebind attributes). torch's own module classes are
not the candidate's: they are not checked.
"""

from __future__ import annotations

import torch

ALLOWED = frozenset({"__init__", "forward", "extra_repr", "__doc__", "__module__", "__qualname__", "__dict__",
                     "__weakref__", "__annotations__", "__firstlineno__", "__static_attributes__", "__slots__",
                     "__classcell__", "__orig_bases__", "__parameters__"})
_MODULE_NAMES = frozenset(dir(torch.nn.Module))
_get = object.__getattribute__


def _modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    """``model`` and every module under it, from their ``_modules`` dictionaries (no method of theirs called)."""
    found, stack, seen = [], [model], set()
    while stack:
        m = stack.pop()
        if id(m) in seen or not isinstance(m, torch.nn.Module):
            continue
        seen.add(id(m))
        found.append(m)
        stack.extend(v for v in _get(m, "_modules").values() if v is not None)
    return found


def module_overrides(model: torch.nn.Module) -> str | None:
    """What a module of the candidate's redefines of ``nn.Module``, or None."""
    for m in _modules(model):
        for klass in type(m).__mro__:
            if klass is torch.nn.Module or (klass.__module__ or "").split(".")[0] == "torch":
                break
            for name in klass.__dict__:
                if name in _MODULE_NAMES and name not in ALLOWED:
                    return (f"{klass.__name__}.{name} redefines nn.Module.{name}: a model may define __init__, "
                            "forward and extra_repr, not nn.Module's machinery")
        for name in _get(m, "__dict__"):
            if name in _MODULE_NAMES:
                return f"an attribute named {name!r} on {type(m).__name__} hides nn.Module.{name}"
    return None


def module_tensors(model: torch.nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(parameters, buffers) of ``model`` and its submodules, each once, from the modules' dictionaries."""
    params, buffers, seen = [], [], set()
    for m in _modules(model):
        for store, out in ((_get(m, "_parameters"), params), (_get(m, "_buffers"), buffers)):
            for t in store.values():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
    return params, buffers
