"""Every bundled task's reference solution passes the full verifier funnel (slow: the whole suite)."""

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.tasks import load_tasks
from tritonrl.verify import Verifier, VerifyItem


@pytest.mark.slow
def test_all_bundled_reference_solutions_accepted(ref_cache_dir):
    tasks = [t for t in load_tasks("bundled") if t.solution]
    assert tasks, "no bundled reference solutions found"
    with Verifier(VerifyConfig(device="cpu", timeout_s=300.0, cache_dir=ref_cache_dir)) as verifier:
        results = verifier.verify_many([VerifyItem(t, code=t.solution) for t in tasks])
    rejected = {t.name: (r.stage.value, r.flags, r.error) for t, r in zip(tasks, results) if not r.correct}
    assert not rejected, rejected
