"""Multi-turn refinement for GRPO (Kevin, arXiv 2507.11948): the model sees the verifier's verdict and revises.

    tritonrl rl --algo grpo --config configs/smoke.yaml --set rl.turns=2 --set rl.num_generations=4 \
        --set rl.per_device_batch_size=4

**How a trajectory becomes training samples.** TRL's ``GRPOTrainer(rollout_func=...)`` (experimental in TRL 1.x)
gives the rollout each process's prompt slice, already repeated ``num_generations`` times by the sampler, and
wants one completion per slot. ``RefinementReward.rollout`` fills ``rl.turns`` consecutive slots with one
trajectory: slot t holds turn t's prompt (the task, then every earlier attempt's code and the verifier's feedback:
``tritonrl.common.prompts.build_refinement_messages``, summarised oldest-first over ``rl.turn_max_prompt_tokens``) and
turn t's completion. So each turn is its own sample (Kevin splits trajectories the same way), and a GRPO group
of ``num_generations`` slots is ``num_generations / turns`` trajectories of one task. Every turn is verified as
soon as it is generated (its feedback is the next prompt); its reward r_t is ``tritonrl.common.reward.compute_reward``,
as in single-turn runs and evaluation. Its training reward is the discounted return (``rl.turn_return``,
``rl.turn_discount`` = gamma, 0.4 as Kevin):

    sum (default; Kevin's best):  G_t = r_t + gamma * G_{t+1}                 (G_T = r_T)
    max:                          G_t = max_{t' >= t} gamma^(t'-t) * r_t' = max(r_t, gamma * G_{t+1})

**Advantages within turn.** Returns of different turns have different scales (with ``sum``, G_1 carries
gamma * G_2 on top of r_1; a model that fixes its first attempts has G_2 above G_1), so TRL's baseline, the mean
over all of a group's turns, gave every sample of one turn the same offset, E[G_t] minus the all-turn mean,
whatever its quality. The trainer (``with_turn_baselines``) uses ``turn_advantages`` instead: each group split
by turn, a return compared with the same turn's returns of the group's trajectories (``rl.num_generations >= 2 *
rl.turns``, checked at load), scaled as ``rl.scale_rewards`` says. ``signal/frac_zero_std_groups`` counts those
same-turn groups, and ``rl.shuffle_rewards`` permutes returns within turn, so the control keeps each turn's
distribution.

In training a trajectory always runs all ``rl.turns`` turns (a correct kernel is asked to get faster), so every
slot is filled; evaluation stops at the first correct attempt unless ``eval.refine_for_speed``.

**Same guarantees as single-turn runs.** The trainer, run directory, manifest, checkpoints and ``--resume`` are
``tritonrl.train.rl.run_online``'s; the rollout keeps no state between steps. The curriculum is fed the
first-turn verdicts only, so its Level-1 correct rate means what it means in a single-turn run, and the
``verify/*`` metrics describe first turns. Logged per step as well: ``multiturn/reward_t{t}``,
``multiturn/correct_t{t}``, ``multiturn/return_t{t}`` and ``multiturn/summarised_prompt_rate`` (prompts that had to
be shortened to fit the budget).

Generation reuses TRL's own tokenisation and generation steps (``_tokenize_prompts``, ``_generate_single_turn``:
transformers or vLLM, the trainer's sampling settings); their absence in another TRL release is a clear error.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from tritonrl.common import ranks
from tritonrl.common.prompts import Attempt, build_refinement_messages
from tritonrl.config import TrainingConfig
from tritonrl.errors import ConfigError
from tritonrl.tasks.model import KernelTask
from tritonrl.train.reward_adapters import VerifierReward, groups_health

TRL_HOOKS = ("_tokenize_prompts", "_generate_single_turn")  # GRPOTrainer steps the rollout reuses


def discounted_returns(rewards: Sequence[float], gamma: float, form: str = "sum") -> list[float]:
    """Per-turn returns of one trajectory: ``sum`` G_t = r_t + gamma G_{t+1}; ``max`` G_t = max(r_t, gamma G_{t+1})."""
    if form not in ("sum", "max"):
        raise ValueError(f"unknown return form {form!r}; choose sum or max")
    returns: list[float] = []
    following = None
    for reward in reversed(rewards):
        if following is None:
            following = float(reward)
        elif form == "sum":
            following = reward + gamma * following
        else:
            following = max(float(reward), gamma * following)
        returns.append(following)
    return returns[::-1]


def prompt_key(prompt: list[dict[str, str]]) -> str:
    return json.dumps(prompt, sort_keys=True)


def turn_groups(turns: Sequence[int], group_size: int) -> list[list[int]]:
    """Slot indices in the groups advantages compare: each ``group_size`` consecutive slots (one prompt's GRPO
    group; a shorter last one is kept) split by turn."""
    groups: list[list[int]] = []
    for start in range(0, len(turns), group_size):
        by_turn: dict[int, list[int]] = {}
        for i in range(start, min(start + group_size, len(turns))):
            by_turn.setdefault(turns[i], []).append(i)
        groups.extend(by_turn[t] for t in sorted(by_turn))
    return groups


def _std(values: Sequence[float]) -> float:
    """Standard deviation with Bessel's correction, as TRL's ``nanstd``; 0 for a single value."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def turn_advantages(returns: Sequence[float], turns: Sequence[int], group_size: int,
                    scale: str = "batch") -> list[float]:
    """GRPO advantages with every group split by turn: A = G - (mean of the same turn's returns in the group),
    divided (``scale``) by the std of those returns (``group``), of the whole batch's returns (``batch``), or by
    nothing (``none``), plus 1e-4, as TRL does. ``returns`` and ``turns`` cover the whole batch, every process's
    slots in process order, so groups are whole."""
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"unknown scale_rewards {scale!r}; choose group, batch or none")
    if len(returns) % group_size or len(turns) != len(returns):
        raise ValueError(f"{len(returns)} returns and {len(turns)} turns do not fill groups of {group_size}")
    advantages = [0.0] * len(returns)
    for index in turn_groups(turns, group_size):
        values = [float(returns[i]) for i in index]
        mean, spread = statistics.fmean(values), _std(values) + 1e-4
        for i, value in zip(index, values, strict=True):
            advantages[i] = (value - mean) / spread if scale == "group" else value - mean
    if scale == "batch":
        spread = _std([float(g) for g in returns]) + 1e-4
        advantages = [a / spread for a in advantages]
    return advantages


def with_turn_baselines(trainer_cls):
    """``trainer_cls`` (a GRPOTrainer) training on ``turn_advantages`` instead of TRL's all-turn group baseline.

    TRL computes advantages inside ``_generate_and_score_completions`` with no hook, so they are replaced in its
    output: every process's (turn, trained return) pairs, which its ``RefinementReward`` kept, are gathered in
    process order (TRL's own layout), and each process keeps its slice, as TRL does.
    """

    class TurnBaselineTrainer(trainer_cls):
        def _generate_and_score_completions(self, inputs):
            output = super()._generate_and_score_completions(inputs)
            output["advantages"] = self._turn_advantages(output["advantages"])
            return output

        def _turn_advantages(self, trl_advantages):
            import torch

            reward = next(f for f in self.reward_funcs if isinstance(f, RefinementReward))
            turns, trained = reward.last_trained
            if len(trained) != len(trl_advantages):
                raise RuntimeError(f"{len(trl_advantages)} slots but the reward kept {len(trained)} returns")
            group_size = self.num_generations if self.model.training else self.num_generations_eval
            advantages = turn_advantages(ranks.gather(trained), ranks.gather(turns), group_size, self.scale_rewards)
            start = self.accelerator.process_index * len(trained)
            return torch.tensor(advantages[start:start + len(trained)], dtype=trl_advantages.dtype,
                                device=trl_advantages.device)

    TurnBaselineTrainer.__name__ = f"TurnBaseline{trainer_cls.__name__}"
    return TurnBaselineTrainer


class RefinementReward(VerifierReward):
    """Both halves of multi-turn GRPO: ``rollout`` (TRL's ``rollout_func``) generates and verifies every turn;
    calling the object (TRL's reward function) returns each slot's discounted return, from the columns the
    rollout added (``turn``, ``turn_reward``, ``turn_return``), and logs per-turn metrics. ``group_size``,
    ``cache``, ``shuffle`` and ``seed`` mean what they mean for ``VerifierReward`` (``refinement_reward`` passes
    the run's), except that shuffling and the zero-variance share work within turn."""

    __name__ = "turn_return"  # TRL names the reward column after this

    def __init__(self, tasks: dict[str, KernelTask], task_by_prompt: dict[str, str], turns: int,
                 gamma: float = 0.4, form: str = "sum", max_prompt_tokens: int | None = None, **kwargs: Any):
        super().__init__(tasks, **kwargs)
        self.task_by_prompt, self.turns, self.gamma, self.form = task_by_prompt, turns, gamma, form
        self.max_prompt_tokens = max_prompt_tokens
        self.last_results: list = []  # the latest rollout's verdicts, in slot order
        self.last_trained: tuple[list[int], list[float]] = ([], [])  # (turn, value returned to TRL) per slot

    # ------------------------------------------------------------ TRL rollout_func
    def rollout(self, prompts: list, trainer: Any) -> dict[str, list]:
        missing = [name for name in TRL_HOOKS if not hasattr(trainer, name)]
        if missing:
            raise ConfigError(f"rl.turns > 1 reuses GRPOTrainer.{', '.join(missing)}, which this TRL lacks; "
                              "install the TRL release in pyproject.toml or set rl.turns=1")
        starts = self._trajectory_starts(prompts)
        keys = [self._task_key(p) for p in starts]
        attempts: list[list[Attempt]] = [[] for _ in starts]
        turns: list[dict[str, list]] = []
        for _ in range(self.turns):
            turns.append(self._turn(trainer, starts, keys, attempts))
        returns = [discounted_returns([t["reward"][i] for t in turns], self.gamma, self.form)
                   for i in range(len(starts))]
        slots = [(i, t) for i in range(len(starts)) for t in range(self.turns)]  # trajectory i fills turns slots
        self.last_results = [turns[t]["result"][i] for i, t in slots]
        logprobs = [turns[t]["logprobs"][i] if turns[t]["logprobs"] is not None else None for i, t in slots]
        return {
            "prompt_ids": [turns[t]["prompt_ids"][i] for i, t in slots],
            "completion_ids": [turns[t]["completion_ids"][i] for i, t in slots],
            "logprobs": None if any(lp is None for lp in logprobs) else logprobs,
            "turn": [t + 1 for _, t in slots],
            "turn_reward": [turns[t]["reward"][i] for i, t in slots],
            "turn_return": [returns[i][t] for i, t in slots],
            "turn_correct": [bool(turns[t]["result"][i].correct) for i, t in slots],
            "prompt_summarised": [turns[t]["summarised"][i] for i, t in slots],
        }

    def _trajectory_starts(self, prompts: list) -> list:
        if len(prompts) % self.turns:
            raise ConfigError(f"a process got {len(prompts)} prompts, not a multiple of rl.turns={self.turns}; "
                              "make rl.per_device_batch_size and rl.num_generations multiples of rl.turns")
        starts = prompts[::self.turns]
        for i, start in enumerate(starts):
            if any(p != start for p in prompts[i * self.turns:(i + 1) * self.turns]):
                raise ConfigError("rl.turns consecutive slots hold different prompts; make rl.num_generations "
                                  "and rl.per_device_batch_size multiples of rl.turns")
        return starts

    def _task_key(self, prompt: list) -> str:
        try:
            return self.task_by_prompt[prompt_key(prompt)]
        except KeyError:
            raise ValueError("a rollout prompt matches no training task's prompt") from None

    def _turn(self, trainer: Any, starts: list, keys: list[str], attempts: list[list[Attempt]]) -> dict[str, list]:
        """Generate one turn for every trajectory, verify it in one batch, append the attempts."""
        def count(messages: list[dict[str, str]]) -> int:
            return len(trainer._tokenize_prompts([messages])[0][0])

        built = [build_refinement_messages(s, a, self.max_prompt_tokens, count) for s, a in zip(starts, attempts)]
        prompt_ids = trainer._tokenize_prompts([b.messages for b in built])[0]
        completion_ids, logprobs = trainer._generate_single_turn(prompt_ids, None, {}, 1)
        texts = trainer.processing_class.batch_decode(completion_ids, skip_special_tokens=True)
        rewards, results = self.score(texts, keys)
        for attempt_list, text, result in zip(attempts, texts, results, strict=True):
            attempt_list.append(Attempt(result.code if result.code is not None else _code(text), result))
        return {"prompt_ids": [list(ids) for ids in prompt_ids], "completion_ids": completion_ids,
                "logprobs": logprobs, "reward": rewards, "result": results,
                "summarised": [b.truncated for b in built]}

    # ------------------------------------------------------------ TRL reward function
    def __call__(self, prompts=None, completions=None, task_key=None, turn=None, turn_reward=None, turn_return=None,
                 log_metric=None, **columns) -> list[float]:
        if turn_return is None or turn is None:
            raise ValueError("RefinementReward needs the columns its rollout adds: pass rollout_func=reward.rollout")
        first = [i for i, t in enumerate(turn) if t == 1]
        if len(self.last_results) == len(turn):  # verify/* and the curriculum: first turns, as single-turn runs
            health = groups_health([[turn_return[i] for i in g] for g in turn_groups(turn, self.group_size)])
            self._account([self.last_results[i] for i in first], [turn_reward[i] for i in first],
                          [task_key[i] for i in first], log_metric, health=health)
        if log_metric is not None:
            for name, value in turn_metrics(turn, turn_reward, turn_return, columns.get("turn_correct"),
                                            columns.get("prompt_summarised")).items():
                log_metric(name, value)
        trained = self._shuffled_within_turn([float(g) for g in turn_return], turn)
        self.last_trained = (list(turn), trained)
        return trained

    def _shuffled_within_turn(self, returns: list[float], turn: Sequence[int]) -> list[float]:
        """``rl.shuffle_rewards``: the batch's returns permuted among the slots of the same turn (off: as is)."""
        if self.shuffle_rng is None:
            return returns
        shuffled = list(returns)
        for t in sorted(set(turn)):
            index = [i for i, x in enumerate(turn) if x == t]
            values = [returns[i] for i in index]
            self.shuffle_rng.shuffle(values)
            for i, value in zip(index, values, strict=True):
                shuffled[i] = value
        return shuffled


def turn_metrics(turn: Sequence[int], reward: Sequence[float], returns: Sequence[float],
                 correct: Sequence[bool] | None = None, summarised: Sequence[bool] | None = None) -> dict[str, float]:
    """Means per turn: ``multiturn/reward_t1``, ``multiturn/return_t1``, ``multiturn/correct_t1``, ..."""
    out: dict[str, float] = {}
    for t in sorted(set(turn)):
        index = [i for i, x in enumerate(turn) if x == t]
        out[f"multiturn/reward_t{t}"] = sum(reward[i] for i in index) / len(index)
        out[f"multiturn/return_t{t}"] = sum(returns[i] for i in index) / len(index)
        if correct is not None:
            out[f"multiturn/correct_t{t}"] = sum(bool(correct[i]) for i in index) / len(index)
    if summarised is not None and len(summarised):
        out["multiturn/summarised_prompt_rate"] = sum(map(bool, summarised)) / len(summarised)
    return out


def _code(text: str) -> str | None:
    from tritonrl.extract import extract_code

    return extract_code(text)


def refinement_reward(config: TrainingConfig, tasks: list[KernelTask], rows: list[dict], verifier=None,
                      curriculum=None) -> RefinementReward:
    """The multi-turn reward (and, through ``.rollout``, the rollout) for ``run_online``'s dataset ``rows``."""
    rl = config.rl
    return RefinementReward(
        {t.key: t for t in tasks}, {prompt_key(row["prompt"]): row["task_key"] for row in rows}, rl.turns,
        gamma=rl.turn_discount, form=rl.turn_return, max_prompt_tokens=rl.turn_max_prompt_tokens,
        verifier=verifier, verify_config=config.verify, reward_config=config.reward, curriculum=curriculum,
        group_size=rl.num_generations, cache=rl.verify_cache, shuffle=rl.shuffle_rewards, seed=config.run.seed)
