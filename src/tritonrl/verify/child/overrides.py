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

The harness reads the modules outside a watch (before a forward's opens), so nothing here runs candidate code
(``inert``): a module's ``_modules``, ``_parameters`` and ``_buffers`` must be plain dicts (a red team's dict
subclass computed the answer in ``values``, unwatched, after the judge wrote the call's inputs), what
``_modules`` holds must be modules, and parameters and buffers plain tensors (a subclass's ``__torch_function__``
would run in the watch's own reads of them).
"""

from __future__ import annotations

import torch

from tritonrl.verify.child.inert import class_dict, module_of, mro, qualname

ALLOWED = frozenset({"__init__", "forward", "extra_repr", "__doc__", "__module__", "__qualname__", "__dict__",
                     "__weakref__", "__annotations__", "__firstlineno__", "__static_attributes__", "__slots__",
                     "__classcell__", "__orig_bases__", "__parameters__"})
_MODULE_NAMES = frozenset(dir(torch.nn.Module))
_STORES = ("_modules", "_parameters", "_buffers")
_get = object.__getattribute__
_values = dict.values


class NotPlain(Exception):
    """A module's stores are not what ``nn.Module`` makes: reading them would run the candidate's code."""


def _stores(m: torch.nn.Module) -> dict:
    """``m``'s own dictionaries, each a plain dict, or ``NotPlain``."""
    own = _get(m, "__dict__")
    if type(own) is not dict:
        raise NotPlain(f"{qualname(type(m))}'s attribute dictionary is not a plain dict")
    stores = {}
    for name in _STORES:
        store = own.get(name)
        if type(store) is not dict:
            raise NotPlain(f"{qualname(type(m))}.{name} is not a plain dict (a module's stores are nn.Module's)")
        stores[name] = store
    return stores


def _modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, dict]]:
    """``model`` and every module under it with its stores, from their ``_modules`` dictionaries (no method of
    theirs called); ``NotPlain`` when one holds something no ``nn.Module`` would."""
    found, stack, seen = [], [model], set()
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        if not issubclass(type(m), torch.nn.Module):
            raise NotPlain(f"a submodule is a {qualname(type(m))}, not an nn.Module")
        seen.add(id(m))
        stores = _stores(m)
        found.append((m, stores))
        stack.extend(v for v in _values(stores["_modules"]) if v is not None)
    return found


def module_overrides(model: torch.nn.Module) -> str | None:
    """What a module of the candidate's redefines of ``nn.Module`` (or holds that is not plain), or None."""
    try:
        modules = _modules(model)
    except NotPlain as exc:
        return str(exc)
    for m, stores in modules:
        for klass in mro(type(m)):
            if klass is torch.nn.Module or module_of(klass).split(".")[0] == "torch":
                break
            for name in class_dict(klass):
                if name in _MODULE_NAMES and name not in ALLOWED:
                    return (f"{qualname(klass)}.{name} redefines nn.Module.{name}: a model may define __init__, "
                            "forward and extra_repr, not nn.Module's machinery")
        for name in _get(m, "__dict__"):
            if type(name) is not str or name in _MODULE_NAMES:
                return f"an attribute named {name!r} on {qualname(type(m))} hides nn.Module.{name}"
        for store in (stores["_parameters"], stores["_buffers"]):
            for t in _values(store):
                if t is not None and type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
                    return f"a parameter or buffer of {qualname(type(m))} is a {qualname(type(t))}, not a plain tensor"
    return None


def module_tensors(model: torch.nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(parameters, buffers) of ``model`` and its submodules, each once, from the modules' dictionaries (after
    ``module_overrides`` found none: stores that are not plain read as empty)."""
    params, buffers, seen = [], [], set()
    try:
        modules = _modules(model)
    except NotPlain:
        return params, buffers
    for _, stores in modules:
        for store, out in ((stores["_parameters"], params), (stores["_buffers"], buffers)):
            for t in _values(store):
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
    return params, buffers
