"""Reading a candidate's objects from trusted code without running any code of the candidate's (candidate child).

    type_name(obj)          # "module.QualName" of type(obj), read from the type's own slots
    class_dict(klass)       # klass's own namespace, past any metaclass
    mro(klass)              # klass.__mro__, past any metaclass

Outside a watch the harness must never call candidate code (docs/verifier.md, "Every moment of candidate code is
watched"): an attribute of a candidate's class can be a property of its metaclass (``__qualname__``,
``__module__``, ``__dict__``), ``isinstance`` reads ``__class__`` (a property, for an object that is not of the
class), and ``x in (a, b)`` calls a metaclass's ``__eq__``. The getters here are ``type``'s own C slots: a metaclass
cannot replace them. What the harness must ask of a candidate's object beyond them it asks inside a watch
(``Monitor.phase``).
"""

from __future__ import annotations

from typing import Any

_type_slots = type.__dict__
_qualname = _type_slots["__qualname__"].__get__
_module = _type_slots["__module__"].__get__
_dict = _type_slots["__dict__"].__get__
_mro = _type_slots["__mro__"].__get__


def type_name(obj: Any) -> str:
    """``module.QualName`` of ``type(obj)``, never through an attribute lookup the candidate's classes can answer."""
    klass = type(obj)
    module = _module(klass)
    qualname = _qualname(klass)
    module = module if type(module) is str else "?"
    return f"{module}.{qualname}" if module != "builtins" else qualname


def qualname(klass: type) -> str:
    return _qualname(klass)


def class_dict(klass: type) -> Any:
    """The class's own namespace (a mappingproxy of a plain dict)."""
    return _dict(klass)


def module_of(klass: type) -> str:
    """The ``__module__`` in the class's own namespace ("" when it is not a string)."""
    module = _module(klass)
    return module if type(module) is str else ""


def mro(klass: type) -> tuple[type, ...]:
    return _mro(klass)
