"""A tensor may not hold its own attribute under one of torch.Tensor's names, nor torch.Tensor or torch change after
the child froze them (``overrides``): the watch's and the harness's reads would run the candidate's code."""

from __future__ import annotations

import torch

from tritonrl.verify.child import overrides


def test_an_own_attribute_under_a_tensor_name_is_found_however_the_dict_is_dressed():
    plain, shadowed, hidden, odd_key, harmless = (torch.zeros(2) for _ in range(5))
    shadowed.detach = lambda: None

    class Quiet(dict):  # answers no key through its methods; attribute lookup reads what it stores
        def keys(self):
            return []

        def __len__(self):
            return 0

    hidden.__dict__ = Quiet(storage_offset=lambda: 0)
    vars(odd_key)[3] = "not a name"
    harmless.note = "a name torch.Tensor does not have"
    assert overrides.tensor_overrides([plain, harmless]) is None
    assert "'detach'" in overrides.tensor_overrides([plain, shadowed])
    assert "'storage_offset'" in overrides.tensor_overrides([hidden])
    assert "not a plain string" in overrides.tensor_overrides([odd_key])


def test_torch_and_its_tensor_class_are_compared_with_what_was_frozen(monkeypatch):
    frozen = overrides._TENSOR_CLASS, overrides._TORCH_NAMES
    try:
        overrides._TENSOR_CLASS = overrides._TORCH_NAMES = None
        assert overrides.tensor_class_changed() is None and overrides.torch_rebound() is None  # nothing frozen yet
        overrides.freeze()
        assert overrides.tensor_class_changed() is None and overrides.torch_rebound() is None
        with monkeypatch.context() as patch:
            patch.setattr(torch, "zeros", lambda *args, **kwargs: None)
            assert "torch.zeros" in overrides.torch_rebound()
        assert overrides.torch_rebound() is None
        with monkeypatch.context() as patch:
            patch.setattr(torch.Tensor, "storage_offset", lambda self: 0, raising=False)  # shadows TensorBase's
            assert overrides.tensor_class_changed() is not None
    finally:
        overrides._TENSOR_CLASS, overrides._TORCH_NAMES = frozen
