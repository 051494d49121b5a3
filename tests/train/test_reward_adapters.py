import asyncio

import pytest

from tritonrl.config import CurriculumConfig, RewardConfig, VerifyConfig
from tritonrl.tasks import get_task
from tritonrl.train.curriculum import Curriculum
from tritonrl.train.reward_adapters import AsyncVerifierReward, VerifierReward, compute_score


def _tasks():
    return {t.key: t for t in (get_task("l1_relu"), get_task("l2_add_relu_mul_residual"))}


def test_one_verify_call_per_batch_metrics_and_curriculum(fake_verifier):
    tasks = _tasks()
    keys = list(tasks)
    cur = Curriculum(CurriculumConfig(trigger=0.4, ramp_updates=2))
    logged = {}
    reward = VerifierReward(tasks, verifier=fake_verifier, curriculum=cur)
    completions = [[{"role": "assistant", "content": "class ModelNew"}], [{"role": "assistant", "content": "no"}],
                   [{"role": "assistant", "content": "ModelNew!"}], [{"role": "assistant", "content": "x"}]]
    rewards = reward(prompts=[None] * 4, completions=completions, task_key=[keys[0], keys[0], keys[1], keys[1]],
                     level=[1, 1, 2, 2], log_metric=lambda k, v: logged.setdefault(k, v), trainer_state=None)
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    assert fake_verifier.calls == [4]
    assert logged["verify/correct_rate"] == 0.5 and logged["verify/format_rate"] == 0.5
    assert "verify/mean_speedup" not in logged  # nothing timed on CPU: no number invented
    assert "verify/mean_speedup_ci95_low" not in logged and "verify/surely_faster_rate" not in logged
    assert cur.l1_correct_rate == 0.5 and cur.p > 0.1  # 0.5 >= trigger: the ramp advanced
    assert logged["curriculum/level2_share"] == cur.p


def test_batch_stats_report_speedups_with_their_intervals():
    from tritonrl.train.reward_adapters import batch_stats
    from tritonrl.verify.shared.verdict import Stage, VerifyResult

    def timed(speedup, ci):
        return VerifyResult(Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True,
                            speedup=speedup, timing={"speedup_ci95": ci})

    results = [timed(1.6, [1.5, 1.7]), timed(1.05, [0.95, 1.15]), VerifyResult(Stage.EXTRACT), timed(1.2, None)]
    metrics = batch_stats(results, [1.15, 1.0, 0.0, 1.0]).as_metrics()
    assert metrics["verify/mean_speedup"] == pytest.approx((1.6 + 1.05 + 1.2) / 3)
    assert metrics["verify/mean_speedup_ci95_low"] == pytest.approx((1.5 + 0.95) / 2)
    assert metrics["verify/surely_faster_rate"] == pytest.approx(1 / 4)
    assert "verify/declined_rate" not in metrics  # logged only when the verifier declined some
    declined = VerifyResult(Stage.FULL, valid=True, correct=None, flags=["declined"], declined="not judged ...")
    stats = batch_stats([*results, declined], [1.15, 1.0, 0.0, 1.0, 0.0])
    assert stats.correct_rate == pytest.approx(3 / 5) and stats.as_metrics()["verify/declined_rate"] == 0.2


def test_async_reward_matches_sync(fake_verifier):
    tasks = _tasks()
    key = next(iter(tasks))
    reward = AsyncVerifierReward(tasks, verifier=fake_verifier)
    out = asyncio.run(reward(completions=["ModelNew", "nothing"], task_key=[key, key]))
    assert out == [1.0, 0.0]


def test_missing_task_key_column_is_explained(fake_verifier):
    with pytest.raises(ValueError, match="task_key"):
        VerifierReward(_tasks(), verifier=fake_verifier)(completions=["x"])


def test_real_verifier_reference_solution_beats_garbage():
    task = get_task("l1_relu")
    reward = VerifierReward({task.key: task}, verify_config=VerifyConfig(device="cpu", workers=2, multi_input=False,
                                                                          timing=False),
                            reward_config=RewardConfig(preset="correctness"))
    try:
        good = f"Here it is:\n```python\n{task.solution}\n```"
        no_kernel = "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
                    "        return torch.relu(x)\n```"
        rewards = reward(completions=[good, "garbage", no_kernel], task_key=[task.key] * 3)
    finally:
        reward.close()
    assert rewards[0] >= 1.0
    assert rewards[1:] == [0.0, 0.0]
    assert reward.last_stats.correct_rate == pytest.approx(1 / 3)


def test_verl_compute_score_real():
    task = get_task("l1_relu")
    good = f"```python\n{task.solution}\n```"
    assert compute_score("tritonrl", good, "l1_relu", {"device": "cpu"}) >= 1.0
    assert compute_score("tritonrl", "nope", task.source, {"device": "cpu"}) == 0.0
