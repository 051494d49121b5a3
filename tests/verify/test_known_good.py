"""The known-good check (``verify.known_good``): RL and evaluation stop before rewarding or scoring anything when
the verifier rejects bundled reference kernels on this machine's stack."""

from __future__ import annotations

import dataclasses

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.verify.parent import known_good
from tritonrl.verify.shared.verdict import Stage, VerifyResult


class Rejecting:
    """A verifier that rejects the tasks named, as Triton 3.6's audit refusal rejected every ``tl.sum``."""

    def __init__(self, rejected: set[str]):
        self.rejected, self.closed, self.judged = rejected, False, []

    def verify_many(self, items):
        self.judged += [i.task.name for i in items]
        return [VerifyResult(Stage.TINY, valid=True, compiled=True, flags=["interpreter_only"],
                             error="kernel `k` is rejected by the GPU compiler: AuditRefusal(...)")
                if i.task.name in self.rejected else
                VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
                for i in items]

    def close(self):
        self.closed = True


def test_every_known_good_kernel_is_accepted_by_the_real_verifier():
    from tritonrl.verify import Verifier

    with Verifier(VerifyConfig(device="cpu", workers=2)) as verifier:
        failed = known_good.known_good_failures(verifier)
    assert [(name, r.stage, r.flags, r.error) for name, r in failed] == []


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch):
    monkeypatch.setattr(known_good, "_PASSED", set())


def test_a_rejected_known_good_kernel_stops_in_one_line_naming_it():
    verifier = Rejecting({"l1_sum_dim", "l1_softmax"})
    with pytest.raises(known_good.VerifierBroken) as stopped:
        known_good.check_known_good(verifier, "the reward")
    text = str(stopped.value)
    assert text.startswith("the reward: the verifier rejects 2 of 9 known-good kernels") and "\n" not in text
    assert "first l1_sum_dim: tiny interpreter_only: kernel `k` is rejected" in text and "triton " in text
    assert verifier.judged == list(known_good.KNOWN_GOOD)


def test_a_kind_of_verifier_that_passed_is_not_judged_again_in_the_process():
    first, second = Rejecting(set()), Rejecting(set())
    known_good.check_known_good(first, "the reward")
    known_good.check_known_good(second, "the evaluation")
    assert first.judged == list(known_good.KNOWN_GOOD) and second.judged == []
    broken = Rejecting({"l1_relu"})
    broken.device = "cuda"  # another kind: judged, and a failure is never remembered as a pass
    for _ in range(2):
        with pytest.raises(known_good.VerifierBroken):
            known_good.check_known_good(broken, "the reward")
    assert broken.judged == list(known_good.KNOWN_GOOD) * 2


def test_the_reward_and_the_evaluation_check_the_verifier_they_make(monkeypatch):
    from tritonrl.common import ranks, result_log
    from tritonrl.verify.parent import backends

    made = []

    def make(config):
        made.append(Rejecting({"l1_matmul"}))
        return made[-1]

    monkeypatch.setattr(backends, "make_verifier", make)
    with pytest.raises(known_good.VerifierBroken, match="^the reward: .*first l1_matmul"):
        ranks.rank_verifier(VerifyConfig(device="cpu"))
    assert made[-1].closed  # not left running
    assert ranks.rank_verifier(VerifyConfig(device="cpu", known_good=False)) is made[-1]  # off: no check

    from tritonrl.tasks.sources import load_bundled

    task = next(t for t in load_bundled() if t.name == "l1_relu")
    pending = [result_log.Pending(task=task, index=0, code=task.solution)]
    with pytest.raises(known_good.VerifierBroken, match="^the evaluation: "):
        result_log._judge(pending, VerifyConfig(device="cpu"), None, lambda p, r: None, None)
    assert made[-1].closed
    config = dataclasses.replace(VerifyConfig(device="cpu"), known_good=False)
    landed = []
    result_log._judge(pending, config, None, lambda p, r: landed.append(r), None)
    assert [r.correct for r in landed] == [True]
