"""The Ray backend gives the local Verifier's verdicts, in order, and survives an actor that dies mid-batch.

One local Ray instance (2 CPUs, no dashboard) and one 2-actor ``RayVerifier`` serve the whole module; each
actor wraps the real ``Verifier`` in ``CrashingVerifier``, which kills its own actor process when a candidate
carries a marker comment (the judged code is otherwise unchanged).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError
from tritonrl.tasks.model import KernelTask
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.parent.backends import make_verifier

ray = pytest.importorskip("ray")

from tritonrl.common.reward import compute_reward
from tritonrl.verify.parent.ray_backend import RayVerifier, plan_units

RELU_TASK = KernelTask(name="test_relu", level=1, source='''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 4
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
''')

KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {expr}, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
        return out
'''
CORRECT = KERNEL.format(expr="tl.where(x > 0, x, 0.0)")
WRONG = KERNEL.format(expr="tl.where(x > 0, x, 0.1)")  # leaks 0.1 for negatives: an output mismatch
CRASH_ONCE = "# test-hook crash-once {path}\n"
CRASH_ALWAYS = "# test-hook crash-always\n"

CONFIG = VerifyConfig(device="cpu", multi_input=False, timing=False, timeout_s=60.0)


class CrashingVerifier:
    """The real Verifier, except that a marked candidate kills the whole actor process (a test-only hook)."""

    def __init__(self, config: VerifyConfig) -> None:
        self.inner = Verifier(config)
        self.device, self.workers = self.inner.device, self.inner.workers

    def verify_many(self, items, progress=False):
        for item in items:
            code = item.code or ""
            if CRASH_ALWAYS in code:
                os._exit(1)
            for line in code.splitlines():
                if line.startswith("# test-hook crash-once "):
                    marker = Path(line.split()[-1])
                    if not marker.exists():
                        marker.write_text("crashed")
                        os._exit(1)
        return self.inner.verify_many(items)

    def close(self):
        self.inner.close()


@pytest.fixture(scope="module")
def ray_verifier(tmp_path_factory):
    root = str(Path(__file__).resolve().parents[2])  # so actors can import this test module (the factory)
    env = {"PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
           "TRITON_INTERPRET": "1"}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    config = VerifyConfig(**{**CONFIG.__dict__, "cache_dir": str(tmp_path_factory.mktemp("refcache"))})
    verifier = RayVerifier(config, num_actors=2, cpus_per_actor=1, max_retries=2, factory=CrashingVerifier)
    yield verifier
    verifier.close()
    ray.shutdown()


def _verdict(result) -> dict:
    """The verdict without what differs between two verifiers: times, and the counts in a mismatch's message
    (each verifier draws its inputs from a secret of its own: tritonrl.verify.judge.references)."""
    data = result.to_dict()
    for volatile in ("elapsed_s", "timing"):
        data.pop(volatile)
    data["error"] = (data["error"] or "").split(":")[0]
    return data


def test_results_equal_local_verifier_in_order(ray_verifier, tmp_path):
    codes = [CORRECT, WRONG, CORRECT, WRONG]
    items = [VerifyItem(RELU_TASK, code=c) for c in codes] + [VerifyItem(RELU_TASK, completion="no code here")]
    remote = ray_verifier.verify_many(items)
    with Verifier(VerifyConfig(**{**CONFIG.__dict__, "cache_dir": str(tmp_path), "workers": 1})) as local:
        expected = [local.verify(RELU_TASK, code=CORRECT), local.verify(RELU_TASK, code=WRONG)]
        expected_extract = local.verify(RELU_TASK, completion="no code here")
    assert [r.correct for r in remote] == [True, False, True, False, False]
    assert [_verdict(r) for r in remote] == [_verdict(expected[i % 2]) for i in range(4)] + [
        _verdict(expected_extract)]
    assert len({info["pid"] for info in ray_verifier.actor_info()}) == 2


def test_verify_single(ray_verifier):
    result = ray_verifier.verify(RELU_TASK, code=CORRECT)
    assert result.correct and compute_reward(result) == 1.0


def test_actor_crash_mid_batch_is_survived(ray_verifier, tmp_path):
    marker = tmp_path / "crashed"
    codes = [CORRECT, WRONG, CRASH_ONCE.format(path=marker) + CORRECT, WRONG, CORRECT]
    results = ray_verifier.verify_many([VerifyItem(RELU_TASK, code=c) for c in codes])
    assert marker.exists(), "the hook did not kill an actor, so nothing was tested"
    assert ray_verifier.last_stats.retried_units >= 1
    assert [r.correct for r in results] == [True, False, True, False, True], (results[2].error, ray_verifier.last_stats)
    assert ray_verifier.last_stats.failed_items == 0


@pytest.mark.slow  # three actor restarts: about 25 s on 2 cores
def test_candidate_that_always_kills_its_actor_costs_only_itself(ray_verifier):
    codes = [CORRECT, CRASH_ALWAYS + CORRECT, WRONG]
    results = ray_verifier.verify_many([VerifyItem(RELU_TASK, code=c) for c in codes])
    assert [r.correct for r in results] == [True, False, False], [(r.stage, r.flags, r.error) for r in results]
    assert "crash" in results[1].flags and compute_reward(results[1]) == 0.0
    assert "died 3 times" in results[1].error
    assert ray_verifier.last_stats.failed_items == 1
    # the actors were restarted and still answer
    assert ray_verifier.verify(RELU_TASK, code=CORRECT).correct


def test_plan_units_groups_by_task():
    other = KernelTask(name="other", level=1, source=RELU_TASK.source + "\n# other\n")
    items = [VerifyItem(t, code="x") for t in [RELU_TASK, other, RELU_TASK, other, RELU_TASK]]
    units = plan_units(items, num_actors=2, floor=1)
    assert sorted(i for u in units for i in u.indices) == list(range(5))
    for unit in units:
        assert len({items[i].task.key for i in unit.indices}) == 1


def test_make_verifier_local_without_ray(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    verifier = make_verifier(VerifyConfig(device="cpu"))
    try:
        assert isinstance(verifier, Verifier)
    finally:
        verifier.close()
    with pytest.raises(ConfigError, match=r"pip install 'tritonrl\[scale\]'"):
        make_verifier(VerifyConfig(device="cpu", backend="ray"))


def test_make_verifier_unknown_backend():
    with pytest.raises(ConfigError, match="unknown verify.backend"):
        make_verifier(VerifyConfig(backend="slurm"))
