"""The parent's reference store: its disk cache is bounded, and a disk that fails never changes a verdict.

Found on an H100 at the bundled suite's timing shapes: each task's references are a few GB, the unbounded disk
cache filled a 64 GiB disk after a dozen tasks, and the failed write escaped ``verify()`` for the whole batch.
"""

import errno
import logging
import os

import torch

from tritonrl.verify import reference
from tritonrl.verify.reference import JobOutcome, ReferenceStore
from tritonrl.verify.trial import TrialSpec


def _trial(k: int) -> TrialSpec:
    return TrialSpec(f"full{k}", "full", f"task{k}", "source", seed=k)


def _payload(k: int, numel: int = 1000) -> bytes:
    from tritonrl.verify import protocol

    out = torch.full((numel,), float(k))
    return protocol.tensors_to_bytes({"outputs": [out], "devices": ["cpu"], "inputs_after": [protocol.tensor_digest(out)]})


def _store(tmp_path, **kwargs) -> tuple[ReferenceStore, list[int]]:
    jobs: list[int] = []

    def run_job(trials):
        jobs.append(len(trials))
        return JobOutcome({i: _payload(int(t.task_key.removeprefix("task"))) for i, t in enumerate(trials)})

    return ReferenceStore(str(tmp_path / "cache"), "cpu", True, run_job, lambda: True, **kwargs), jobs


def test_a_failing_disk_leaves_references_in_memory_and_warns(tmp_path, monkeypatch, caplog):
    store, jobs = _store(tmp_path)

    def full_disk(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", path)

    monkeypatch.setattr(reference.protocol, "write_atomic", full_disk)
    with caplog.at_level(logging.WARNING, logger=reference.__name__):
        refs = store.get([_trial(1), _trial(2)])
        store.save_timing("key", {"ok": True})
    assert [float(refs[f"full{k}"]["outputs"][0][0]) for k in (1, 2)] == [1.0, 2.0]
    assert store.stats["disk_write_errors"] >= 2
    assert sum("No space left" in r.getMessage() for r in caplog.records) == 1  # once, not per entry
    assert store.get([_trial(1)])["full1"]["outputs"][0][0] == 1.0 and jobs == [2]  # from memory


def test_disk_cache_is_pruned_least_recently_used_first(tmp_path):
    size = len(_payload(0))
    store, jobs = _store(tmp_path, max_bytes=1, max_disk_bytes=int(2.5 * size))  # memory keeps one entry
    cache = tmp_path / "cache"
    store.get([_trial(2)])
    store.get([_trial(1)])  # memory now holds 1 only
    old = os.stat(cache / f"{store.key(_trial(2))}.ref.pt").st_mtime - 100
    for k in (1, 2):
        os.utime(cache / f"{store.key(_trial(k))}.ref.pt", (old - k, old - k))  # 2 is older than 1
    store.get([_trial(2)])  # a disk hit: 2 becomes the most recently used
    store.get([_trial(3)])  # over the budget: 1 goes
    kept = sorted(p.name for p in cache.glob("*.ref.pt"))
    assert kept == sorted(f"{store.key(_trial(k))}.ref.pt" for k in (2, 3))
    assert not (cache / f"{store.key(_trial(1))}.ref.sig").exists()
    assert sum(p.stat().st_size for p in cache.glob("*.ref.pt")) <= int(2.5 * size)
    assert store.stats["disk_pruned"] == 1 and store.stats["disk_hits"] == 1 and jobs == [1, 1, 1]
    assert store.get([_trial(1)])["full1"]["outputs"][0][0] == 1.0 and jobs == [1, 1, 1, 1]  # recomputed


def test_an_entry_larger_than_the_disk_budget_is_not_written(tmp_path):
    store, _ = _store(tmp_path, max_disk_bytes=10)
    store.get([_trial(1)])
    assert not list((tmp_path / "cache").glob("*.ref.pt")) and store.stats["disk_write_errors"] == 0
