"""Declined verdicts (issue 53): a task the CPU cannot judge within its budget is neither correct nor wrong; what
could be judged still fails a candidate that fails it; a slow candidate on a judgeable task is still a timeout, and
a timeout's message carries the clock's numbers."""

import json
import re
from pathlib import Path

import pytest

from tests.verify.tasks import RELU, TASKS
from tritonrl.common.reward import compute_reward
from tritonrl.config import RewardConfig, VerifyConfig
from tritonrl.tasks.model import KernelTask
from tritonrl.verify import Flag, Stage, VerifyResult
from tritonrl.verify.parent import plan as plan_module
from tritonrl.verify.parent.plan import build_trials

GOOD = (Path(__file__).parent / "fixtures" / "runtime" / "good_relu.py").read_text()
# A model whose weight is fixed in its code (as VGG's layers are): no size constant reaches it, so no reduction fits
# the CPU budget (a 1024x1024 weight: 1M elements against 262K), not even in its tiny variant.
FIXED_WEIGHT = """import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(1024, 1024)
    def forward(self, x):
        return torch.relu(self.proj(x))
batch_size = 64
def get_inputs():
    return [torch.randn(batch_size, 1024)]
def get_init_inputs():
    return []
"""
BIG = KernelTask("fixed_weight", 2, FIXED_WEIGHT)
WRONG = GOOD.replace("tl.where(x > 0, x, 0.0)", "tl.where(x > 0, x, 0.5)")
HANG = GOOD.replace("        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n",
                    "        while n > 0:\n            relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)\n")


def test_a_task_no_reduction_fits_is_declined_in_the_plan_with_the_numbers():
    trials = build_trials(BIG, VerifyConfig(), device="cpu")
    assert trials.oversize and list(trials) == []  # its tiny variant keeps the 1M-element weight: over budget too
    assert re.search(r"needs 134M FLOPs and a 1.05M-element tensor, over the CPU budget \(67.1M FLOPs, 262K "
                     r"elements", trials.declined), trials.declined
    assert "only the import was judged" in trials.declined
    assert build_trials(BIG, VerifyConfig(), device="cuda").declined is None  # a GPU judges it
    full_size = VerifyConfig(cpu_max_numel=None, cpu_max_flops=None)  # --full-size: try the sizes as written
    assert build_trials(BIG, full_size, device="cpu").declined is None
    assert build_trials(TASKS["relu"], VerifyConfig(), device="cpu").declined is None


def test_a_task_whose_cost_cannot_be_counted_is_declined_only_when_an_input_alone_is_over_the_budget():
    # ``.item()`` stops the meta device (a Swin transformer's): its FLOPs are unknown, its inputs are not
    item = FIXED_WEIGHT.replace("self.proj = nn.Linear(1024, 1024)", "pass").replace(
        "return torch.relu(self.proj(x))", "return x * (x.sum() > 0).item()").replace("1024)]", "image_size)]")
    big = KernelTask("item_big", 3, item.replace("batch_size = 64", "batch_size = 4\nimage_size = 3 * 224 * 224"))
    small = KernelTask("item_small", 3, item.replace("batch_size = 64", "batch_size = 4\nimage_size = 256"))
    declined = build_trials(big, VerifyConfig(), device="cpu").declined
    assert "needs an input of 602K elements (its FLOPs cannot be counted on the meta device)" in declined
    assert build_trials(small, VerifyConfig(), device="cpu").declined is None  # unknown, not over: judged


def test_declined_verdict_shape_and_reward(verifier):
    result = verifier.verify(BIG, code=GOOD)
    assert (result.stage, result.valid, result.compiled, result.correct) == (Stage.COMPILE, True, False, None)
    assert result.flags == [Flag.DECLINED.value] and result.error is None
    assert result.declined.startswith("not judged on this CPU: one forward of fixed_weight")
    data = json.loads(result.to_json())
    assert data["correct"] is None and data["declined"] == result.declined
    assert VerifyResult.from_dict(data).declined == result.declined
    assert compute_reward(result) == 0.0  # never rewarded as correct
    # what could be judged still fails: the static checks, the import
    static = verifier.verify(BIG, code=GOOD.replace("import triton\n", "import triton\nimport socket\n"))
    assert static.stage is Stage.STATIC and static.correct is False and static.declined is None
    broken = verifier.verify(BIG, code=GOOD + "\nraise ValueError('broken at import')\n")
    assert broken.stage is Stage.COMPILE and Flag.IMPORT_ERROR.value in broken.flags and broken.declined is None


@pytest.fixture
def oversize_relu(monkeypatch):
    """The ReLU task as if no reduction fitted the CPU budget: its tiny trial runs, its full trials are declined."""
    task = KernelTask("relu_over_budget", 1, RELU)
    monkeypatch.setattr(plan_module, "fit_cpu_budget", lambda t, config: (t, True))
    return task


def test_declined_after_the_tiny_trial_and_a_wrong_kernel_still_fails(verifier, oversize_relu):
    trials = build_trials(oversize_relu, verifier.config, device="cpu")
    assert [t.name for t in trials] == ["tiny"] and "only its tiny trial was run" in trials.declined
    good, wrong = verifier.verify(oversize_relu, code=GOOD), verifier.verify(oversize_relu, code=WRONG)
    assert (good.stage, good.compiled, good.tiny_correct, good.correct) == (Stage.FULL, True, True, None)
    assert good.flags == [Flag.DECLINED.value] and good.declined == trials.declined
    staged = RewardConfig(preset="staged")
    assert compute_reward(good) == 0.0 and compute_reward(good, staged) == staged.tiny_credit  # a full-stage failure's
    assert wrong.stage is Stage.TINY and wrong.correct is False and wrong.declined is None
    assert Flag.TINY_MISMATCH.value in wrong.flags


def test_only_a_candidate_that_passed_what_was_run_is_declined():
    declined = plan_module.TrialPlan([], oversize=True, declined="not judged on this CPU: ...")
    for stage, flag in ((Stage.TINY, Flag.TIMEOUT), (Stage.COMPILE, Flag.IMPORT_ERROR), (Stage.TINY, Flag.CRASH)):
        failed = VerifyResult(stage, valid=True, flags=[flag.value], error="...")
        assert plan_module.mark_declined(failed, declined) is failed and failed.correct is False
        assert failed.declined is None and failed.flags == [flag.value]
    passed = VerifyResult(Stage.DONE, valid=True, compiled=False, flags=[])
    assert plan_module.mark_declined(passed, declined).declined == "not judged on this CPU: ..."
    assert passed.stage is Stage.COMPILE and passed.correct is None  # the plan was empty: nothing built
    judged = VerifyResult(Stage.DONE, valid=True, correct=True)
    assert plan_module.mark_declined(judged, plan_module.TrialPlan([])).correct is True  # no decline: as judged


def test_a_slow_kernel_on_a_judgeable_task_is_a_timeout_whose_message_matches_the_clock(verifier):
    result = verifier.verify(TASKS["relu"], code=HANG)
    assert result.stage is Stage.TINY and result.correct is False and result.declined is None
    assert result.flags == [Flag.TIMEOUT.value]
    first = result.error.splitlines()[0]
    found = re.fullmatch(r"timed out in the tiny stage, trial tiny: the candidate's process used its whole 12 s "
                         r"limit \(compile ([\d.]+) s, tiny ([\d.]+) s\); this call took ([\d.]+) s \(([\d.]+) s "
                         r"charged to the candidate(.*)\)", first)
    assert found, first
    compile_s, tiny_s, call_s, charged_s = map(float, found.groups()[:4])
    assert 11.8 <= compile_s + tiny_s <= 12.3 and abs(charged_s - 12) <= 0.3  # the limit, spent, stage by stage
    assert abs(call_s - result.elapsed_s) <= 0.1 and call_s >= charged_s - 0.1  # the call's own clock
    rest = [float(x) for x in re.findall(r"([\d.]+) s ", found.group(5))]  # where the rest of the call went
    assert abs(charged_s + sum(rest) - call_s) <= 0.3, first
