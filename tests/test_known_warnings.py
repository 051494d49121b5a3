"""The warnings the ``tritonrl`` command silences at start-up: exactly the known ones (message, category and module),
never a blanket filter."""

import warnings

import pytest

from tritonrl.cli import known_warnings

GRADIENT = "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use `is_activation_checkpointing` instead."


def shown(message: str, category: type[Warning], module: str) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("always")
        known_warnings.install()
        warnings.warn_explicit(message, category, f"/x/{module.replace('.', '/')}.py", 3312, module=module,
                               registry={})
    return bool(caught)


def test_transformers_gradient_checkpointing_notice_is_silenced():
    assert not shown(GRADIENT, FutureWarning, "transformers.modeling_utils")


@pytest.mark.parametrize("message,category,module", [
    ("`something_else` is deprecated", FutureWarning, "transformers.modeling_utils"),  # another message
    (GRADIENT, DeprecationWarning, "transformers.modeling_utils"),  # another category
    (GRADIENT, FutureWarning, "tritonrl.train.rl"),  # another module
])
def test_any_other_warning_still_shows(message, category, module):
    assert shown(message, category, module)


def test_each_known_warning_says_why_it_is_harmless():
    assert all(len(why) > 40 for *_, why in known_warnings.KNOWN)
