"""Test defaults: CPU-only, Triton's interpreter on, GPU tests skipped unless a GPU is present."""

import os

# Must be set before triton is imported anywhere in the test process.
if not os.environ.get("TRITONRL_TEST_CUDA"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

try:
    from hypothesis import settings
except ImportError:  # the dev extra is not installed: only the property-based tests need it
    settings = None

if settings is not None:
    # "ci" (chosen when $CI is set): the same examples every run, so a red CI run is reproducible; locally
    # "dev" keeps exploring new examples. HYPOTHESIS_PROFILE=ci picks it by hand.
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.register_profile("dev", print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def pytest_configure(config):
    from tritonrl.cli import known_warnings

    known_warnings.install()  # the harmless library warnings the command silences, silent in the tests too
