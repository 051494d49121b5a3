"""Honest memory-bound kernels earn the same resolved speedup alone and inside a busy batch (issue 38, item 3).

    TRITONRL_TEST_CUDA=1 python -m pytest -m gpu tests/verify/test_gpu_busy_batch.py -v     # or: gpu_tests.sh busy

Judged alone (one candidate per batch, one child per GPU), then among 32+ concurrent candidates (the other bundled
solutions, 4 children per GPU, as the batch of 44 in which ``l1_leaky_relu`` and ``l1_softmax`` came back
``runtime_ms 0.0``, ``timing_unresolved``). docs/timing.md, "Timing inside a busy batch".
"""

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.shared.timing_stats import estimates_agree

pytestmark = pytest.mark.gpu

WATCHED = ("l1_leaky_relu", "l1_softmax", "l1_sigmoid", "l1_transpose")  # each lost its speed in a busy batch
BATCH_MIN = 32


def _config(tmp_path, workers):
    return VerifyConfig(cache_dir=str(tmp_path), device="cuda", timeout_s=120.0, warmup=3, timed_trials=20,
                        workers_per_gpu=workers, reference_memory_gb=16.0)


def _figures(result):
    timing = result.timing or {}
    return result.speedup, timing.get("speedup_ci95"), result.flags, timing.get("unresolved"), \
        (timing.get("candidate") or {}).get("overhead")


def test_memory_bound_speedups_alone_and_in_a_busy_batch(tmp_path):
    from tritonrl.tasks import load_tasks

    tasks = {t.name: t for t in load_tasks("bundled") if t.solution}
    others = [t for name, t in tasks.items() if name not in WATCHED]
    assert all(n in tasks for n in WATCHED) and len(others) + len(WATCHED) >= BATCH_MIN
    alone = {}
    with Verifier(_config(tmp_path / "alone", 1)) as verifier:
        for name in WATCHED:
            alone[name] = verifier.verify_many([VerifyItem(tasks[name], code=tasks[name].solution)])[0]
    batch = [VerifyItem(t, code=t.solution) for t in [*others[:len(others) // 2], *(tasks[n] for n in WATCHED),
                                                      *others[len(others) // 2:]]]
    with Verifier(_config(tmp_path / "busy", 4)) as verifier:
        busy = {item.task.name: r for item, r in zip(batch, verifier.verify_many(batch)) if item.task.name in WATCHED}
    report = {n: {"alone": _figures(alone[n]), "busy": _figures(busy[n])} for n in WATCHED}
    for name in WATCHED:
        a, b = alone[name], busy[name]
        assert isinstance(a.speedup, float) and a.timing.get("speedup_ci95"), report
        assert isinstance(b.speedup, float) and b.timing.get("speedup_ci95"), report  # resolved, trusted
        assert "timing_unresolved" not in b.flags, report
        assert estimates_agree(a.speedup, a.timing["speedup_ci95"], b.speedup, b.timing["speedup_ci95"]), report
