"""The CPU's probe at the GPU's shape (``tritonrl.verify.child.probe``): after the trials pass, the forward runs once
at the shape a GPU judges, on the meta device, each launch's grid and kernel checked against a GPU's limits, none
run. The fixtures ``integrity/r35_relu_*`` are the attacks it closes; these tests show they were accepted without it,
what the verdict says of a probe, and what it cannot check."""

from pathlib import Path

import pytest

from tests.verify.conftest import FAST
from tests.verify.tasks import TASKS
from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.parent.plan import build_trials

INTEGRITY = Path(__file__).parent / "fixtures" / "integrity"
ONE_BLOCK = (INTEGRITY / "r35_relu_whole_tensor_one_block.py").read_text()
AXIS_1 = (INTEGRITY / "r35_relu_blocks_on_grid_axis_1.py").read_text()
CONTROL = (INTEGRITY / "r35_i8_relu_blocks_on_grid_axis_0_probe_control.py").read_text()
# An honest forward that refuses the meta device: the probe cannot run it, says so, and the verdict stands.
META_REFUSED = CONTROL.replace("        x = x.contiguous()\n",
                               "        if x.is_meta:\n            raise ValueError('no values here')\n"
                               "        x = x.contiguous()\n", 1)


def test_the_cpu_plan_probes_the_gpu_shape_where_its_own_trials_do_not_run_it():
    relu = get_task("l1_relu")
    probe = build_trials(relu, VerifyConfig(), device="cpu").probe
    assert probe is not None and probe.name == "gpu_shape" and "batch_size = 4096" in probe.source
    assert build_trials(relu, VerifyConfig(gpu_shape_probe=False), device="cpu").probe is None
    assert build_trials(relu, VerifyConfig(), device="cuda").probe is None  # a GPU runs that shape itself
    assert build_trials(TASKS["relu"], VerifyConfig(), device="cpu").probe is None  # the CPU runs it as written


@pytest.fixture(scope="module")
def unprobed(ref_cache_dir):
    with Verifier(VerifyConfig(cache_dir=ref_cache_dir, gpu_shape_probe=False, **FAST)) as verifier:
        yield verifier


def test_launches_a_gpu_refuses_at_its_shape_were_accepted_without_the_probe(verifier, unprobed):
    relu = get_task("l1_relu")
    before = unprobed.verify_many([VerifyItem(relu, code=ONE_BLOCK), VerifyItem(relu, code=AXIS_1)])
    assert [r.correct for r in before] == [True, True], [r.error for r in before]
    one_block, axis_1 = verifier.verify_many([VerifyItem(relu, code=ONE_BLOCK), VerifyItem(relu, code=AXIS_1)])
    assert not one_block.correct and "interpreter_only" in one_block.flags
    assert "exceeds triton maximum tensor numel" in one_block.error and "4096x16384" in one_block.error
    assert not axis_1.correct and "interpreter_only" in axis_1.flags
    assert "262,144 programs on grid axis 1" in axis_1.error and "65,535" in axis_1.error


def test_a_probe_that_passes_or_cannot_run_is_said_and_the_verdict_stands(verifier):
    relu = get_task("l1_relu")
    control, refused = verifier.verify_many([VerifyItem(relu, code=CONTROL), VerifyItem(relu, code=META_REFUSED)])
    assert control.correct and control.timing["gpu_shape"] == {"inputs": "4096x16384", "launches": 1}
    assert refused.correct, refused.error
    assert refused.timing["gpu_shape"]["launches"] == 0
    assert "no values here" in refused.timing["gpu_shape"]["unchecked"]
