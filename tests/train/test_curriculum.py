import itertools

import pytest

from tritonrl.config import CurriculumConfig
from tritonrl.train.curriculum import Curriculum, CurriculumSampler


def test_share_holds_below_trigger_then_ramps_linearly_to_end():
    cfg = CurriculumConfig(start_p=0.1, end_p=0.5, trigger=0.4, window=8, ramp_updates=4)
    cur = Curriculum(cfg)
    for _ in range(3):
        assert cur.update([1, 1, 1, 1], [True, False, False, False]) == pytest.approx(0.1)  # rate 0.25
    shares = [cur.update([1, 1, 1, 1], [True, True, True, True]) for _ in range(6)]
    # window of 8: after the first all-correct batch the rate is 5/8 >= 0.4, so the ramp starts at once
    assert shares[:4] == pytest.approx([0.2, 0.3, 0.4, 0.5])
    assert shares[4:] == pytest.approx([0.5, 0.5])
    # a bad spell holds p, never lowers it
    for _ in range(3):
        assert cur.update([1] * 8, [False] * 8) == pytest.approx(0.5)


def test_level2_results_do_not_move_the_level1_rate():
    cur = Curriculum(CurriculumConfig(trigger=0.4))
    cur.update([2, 2, 2], [True, True, True])
    assert cur.l1_correct_rate is None and cur.p == pytest.approx(0.1)


def _share_of_level2(cur, n=4000):
    levels = [1] * 10 + [2] * 10
    sampler = CurriculumSampler(levels, cur, mini_repeat_count=1)
    drawn = list(itertools.islice(iter(sampler), n))
    return sum(levels[i] == 2 for i in drawn) / n


def test_sampler_follows_share_and_disabled_is_uniform():
    assert _share_of_level2(Curriculum(CurriculumConfig(start_p=0.1))) == pytest.approx(0.1, abs=0.03)
    assert _share_of_level2(Curriculum(CurriculumConfig(start_p=0.5))) == pytest.approx(0.5, abs=0.04)
    assert _share_of_level2(Curriculum(CurriculumConfig(enabled=False, start_p=0.1))) == pytest.approx(0.5, abs=0.04)


def test_sampler_layout_matches_trl_repeat_sampler():
    sampler = CurriculumSampler([1, 1, 2, 2, 1], Curriculum(), mini_repeat_count=2, batch_size=3, repeat_count=2)
    drawn = list(itertools.islice(iter(sampler), 12))
    chunk = drawn[:6]
    assert chunk[0::2] == chunk[1::2]  # each prompt num_generations times in a row
    assert drawn[6:12] == chunk        # the chunk is repeated for steps_per_generation


def test_state_dict_round_trip_reproduces_future_samples():
    cur = Curriculum(CurriculumConfig(seed=3, window=4))
    levels = [1, 2, 1, 2, 1, 2]
    list(itertools.islice(iter(CurriculumSampler(levels, cur, 1)), 7))
    cur.update([1, 1], [True, True])
    state = cur.state_dict()
    expected = list(itertools.islice(iter(CurriculumSampler(levels, cur, 1)), 20))
    restored = Curriculum(CurriculumConfig(seed=99, window=4))
    restored.load_state_dict(state)
    assert restored.p == cur.p != 0.1 or restored.updates == 1
    assert list(itertools.islice(iter(CurriculumSampler(levels, restored, 1)), 20)) == expected
