"""Shared verifiers for the verifier's tests: starting one (a warm zygote) costs seconds, so tests share them."""

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier

FAST = {"device": "cpu", "timeout_s": 12.0, "workers": 2}


@pytest.fixture(scope="session")
def ref_cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("refcache"))


@pytest.fixture(scope="session")
def runtime_verifier(ref_cache_dir):
    """Static checks off: each runtime defence is tested on its own."""
    with Verifier(VerifyConfig(static_checks=False, cache_dir=ref_cache_dir, **FAST)) as verifier:
        yield verifier


@pytest.fixture(scope="session")
def verifier(ref_cache_dir):
    """The full funnel, as training and evaluation use it."""
    with Verifier(VerifyConfig(cache_dir=ref_cache_dir, **FAST)) as verifier:
        yield verifier
