"""Every moment of candidate code is watched (issue 51, class 2): the harness's reads of candidate objects run none
of the candidate's code, and what runs when the harness drops an object, or when garbage is collected, runs inside
a watch that judges it. In this process, without a child (the verdicts: ``fixtures/integrity/r12_unwatched_*``).
"""

import gc

import torch
import torch.nn as nn

from tritonrl.verify.child import hooks
from tritonrl.verify.child.harness import Held
from tritonrl.verify.child.inert import type_name
from tritonrl.verify.child.monitor import Monitor, hold_garbage
from tritonrl.verify.child.overrides import module_overrides, module_tensors
from tritonrl.verify.child.rules import conduct_problem, judge_record, output_values


def _noisy_class(calls: list) -> type:
    """A class whose metaclass answers ``__module__`` and ``==`` with code of its own."""

    class Meta(type):
        @property
        def __module__(cls):
            calls.append("__module__")
            return "forged"

        def __eq__(cls, other):
            calls.append("__eq__")
            return True

        __hash__ = type.__hash__

    class Noisy(metaclass=Meta):
        pass

    return Noisy


def test_type_names_and_output_checks_run_no_metaclass_code():
    calls: list = []
    obj = _noisy_class(calls)()
    assert type_name(obj) == f"{__name__}._noisy_class.<locals>.Noisy" and calls == []
    assert output_values(obj) is None and calls == []  # ``in (tuple, list)`` would have asked ``__eq__``
    flag, message = judge_record(None, obj, intact=True)
    assert flag == "not_plain_tensor" and "Noisy" in message and calls == []
    assert type(obj).__module__ == "forged" and calls == ["__module__"]  # what an attribute lookup does


def test_a_module_store_that_is_not_a_plain_dict_is_refused_unread():
    calls: list = []

    class Stores(dict):
        def values(self):
            calls.append("values")
            return dict.values(self)

        def items(self):
            calls.append("items")
            return dict.items(self)

    class Sneaky(nn.Module):
        def __init__(self):
            super().__init__()
            self._modules = Stores(self._modules)

    class Holder(nn.Module):
        def __init__(self, what):
            super().__init__()
            self._modules["x"] = what

    assert "not a plain dict" in module_overrides(Sneaky()) and calls == []
    assert module_tensors(Sneaky()) == ([], []) and calls == []
    assert "not an nn.Module" in module_overrides(Holder(object()))

    class Odd(torch.Tensor):
        pass

    with_buffer = nn.Module()
    with_buffer.register_buffer("b", torch.zeros(2).as_subclass(Odd))
    assert "not a plain tensor" in module_overrides(with_buffer)
    honest = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    honest.register_buffer("table", torch.arange(3.0))
    assert module_overrides(honest) is None
    params, buffers = module_tensors(honest)
    assert len(params) == 4 and len(buffers) == 1


def _monitor() -> Monitor:
    """A monitor with its torch-op watch only (no launch hooks installed in this process)."""
    monitor = Monitor("candidate.py")
    monitor._mode = hooks.watch_mode(monitor)
    return monitor


class _Computes:
    """A candidate object whose ``__del__`` computes with torch."""

    def __del__(self):
        torch.relu(torch.ones(4))


def test_what_runs_while_the_harness_drops_an_object_is_judged():
    monitor = _monitor()
    held = Held(_Computes())
    with monitor.phase("drop") as record:
        held.objects.clear()
    assert record.torch_ops == ["relu"]
    flag, message = conduct_problem(record, strict=False)  # every mode: nothing honest computes while destroyed
    assert flag == "torch_compute" and "dropped" in message
    with monitor.phase("build") as record:  # a construction may compute (what it made is torch's)
        torch.relu(torch.ones(4))
    assert record.torch_ops == [] and conduct_problem(record) is None


def test_garbage_is_collected_only_inside_a_watch():
    """Automatic collection is off from before the import; a cycle's ``__del__`` runs at the next watched phase's
    collection, and a candidate that turns collection on finds it off again once its phase ends."""
    was_enabled = gc.isenabled()
    monitor = _monitor()
    try:
        hold_garbage()
        cycle = _Computes()
        cycle.me = cycle
        del cycle  # garbage, not collected: automatic collection is off
        assert not gc.isenabled()
        with monitor.phase("drop") as record:
            pass
        assert record.torch_ops == ["relu"]
        with monitor.phase("build"):
            gc.enable()  # what a candidate may do
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def test_the_watch_finds_tensors_and_numbers_by_type_not_by_a_claimed_class():
    """An object whose ``__class__`` property claims ``torch.Tensor`` (or a float subclass claiming ``float``) runs
    no code of its own when the watch collects a launch's tensors or an output's, or counts numbers: ``isinstance``
    consults ``__class__``, the watch looks at the type."""
    from tritonrl.verify.child.aten_ops import launch_tensors, tensors
    from tritonrl.verify.child.monitor import _number

    calls = []

    class Claims:
        @property
        def __class__(self):
            calls.append("__class__")
            return torch.Tensor

    class Scalar(float):
        @property
        def __class__(self):
            calls.append("__class__")
            return float

    real = torch.ones(2)
    assert tensors((Claims(), real)) == [real]
    assert launch_tensors(((Claims(),), {"x": real})) == [real]
    assert _number(Scalar(0.5)) and not _number(True)
    assert calls == []
