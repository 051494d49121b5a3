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

Tensors alike (``tensor_overrides``): a tensor the watch or the harness reads may not hold, as an attribute of its
own, a name ``torch.Tensor`` has (an instance attribute wins over a method: ``out.detach = f`` ran the candidate's
``f`` in the harness's fingerprint of the output, after the watch closed, and ``out.storage_offset = f`` pointed
the output's provenance at bytes it does not cover: the thirty-ninth red team), nor the class ``torch.Tensor``
change (``tensor_class_changed``), nor a name of ``torch``'s be bound anew (``torch_rebound``); checked on every
tensor of a watched torch op and of a launch, on a forward's inputs, parameters and buffers before it and on its
outputs after it (``Monitor.run_forward``, before the watch's last reads and the harness's delivery).

The harness reads the modules outside a watch (before a forward's opens), so nothing here runs candidate code
(``inert``): a module's ``_modules``, ``_parameters`` and ``_buffers`` must be plain dicts (a red team's dict
subclass computed the answer in ``values``, unwatched, after the judge wrote the call's inputs), what
``_modules`` holds must be modules, and parameters and buffers plain tensors (a subclass's ``__torch_function__``
would run in the watch's own reads of them).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import torch

from tritonrl.verify.child.inert import class_dict, module_of, mro, qualname

ALLOWED = frozenset({"__init__", "forward", "extra_repr", "__doc__", "__module__", "__qualname__", "__dict__",
                     "__weakref__", "__annotations__", "__firstlineno__", "__static_attributes__", "__slots__",
                     "__classcell__", "__orig_bases__", "__parameters__"})
_MODULE_NAMES = frozenset(dir(torch.nn.Module))
_STORES = ("_modules", "_parameters", "_buffers")
_get = object.__getattribute__
_values = dict.values
_TENSOR_NAMES = frozenset(dir(torch.Tensor))
_tensor_attributes = vars(torch.Tensor)["__dict__"].__get__  # a tensor's own attribute dictionary, as stored
_is = operator.is_
_MISSING = object()
# torch.Tensor's class and torch's names as the child left them before the candidate's import (``freeze``: after the
# verifier's own wrappers went in); None until then (nothing to compare)
_TENSOR_CLASS: list | None = None
_TORCH_NAMES: list | None = None


def freeze() -> None:
    """Take ``torch.Tensor``'s class and ``torch``'s names as they are now, the verifier's wrappers installed and no
    candidate code run yet: what ``tensor_class_changed`` and ``torch_rebound`` compare with."""
    global _TENSOR_CLASS, _TORCH_NAMES
    _TENSOR_CLASS = list(vars(torch.Tensor).values())
    _TORCH_NAMES = [(name, value) for name, value in vars(torch).items() if type(name) is str]


def tensor_overrides(tensors: Iterable[torch.Tensor]) -> str | None:
    """What one of ``tensors`` holds of its own that shadows ``torch.Tensor``'s members (or under a key no attribute
    lookup compares by value), or None. Read through the dictionary type's own methods: a dict subclass set as a
    tensor's ``__dict__`` answers lookups from what it stores, not from its methods."""
    for t in tensors:
        own = _tensor_attributes(t)
        if not dict.__len__(own):
            continue
        for key in dict.keys(own):
            if type(key) is not str:
                return "a tensor holds an attribute of its own under a key that is not a plain string"
            if key in _TENSOR_NAMES:
                return (f"a tensor holds its own attribute '{key}', a name torch.Tensor has: the verifier's reads of "
                        "the tensor would run it")
    return None


def torch_rebound() -> str | None:
    """Which of ``torch``'s names (as ``freeze`` found them, before any candidate code) is bound to something else
    now, or None: the harness calls ``torch.zeros`` and its like after the forward's watch closed (the thirty-ninth
    red team's ``a01`` put its own ``torch.zeros`` there and rewrote the output in the fingerprint). Names added
    since are not compared: importing a submodule adds its name, and a new name replaces none of the harness's."""
    now = vars(torch)
    get = dict.get
    for name, value in _TORCH_NAMES or ():
        if get(now, name, _MISSING) is not value:
            return f"torch.{name} was rebound (the verifier calls torch's functions after the forward)"
    return None


def tensor_class_changed() -> str | None:
    """What changed in ``torch.Tensor``'s class since ``freeze`` (a method replaced, added or removed: the
    verifier's reads of every tensor would run it), or None."""
    if _TENSOR_CLASS is None:
        return None
    now = vars(torch.Tensor)
    if len(now) != len(_TENSOR_CLASS) or not all(map(_is, _TENSOR_CLASS, now.values())):
        return "torch.Tensor's class was changed (a method replaced, added or removed)"
    return None


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
