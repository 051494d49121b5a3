"""Test defaults: CPU-only, Triton's interpreter on, GPU tests skipped unless a GPU is present."""

import os

# Must be set before triton is imported anywhere in the test process.
if not os.environ.get("TRITONRL_TEST_CUDA"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402


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
