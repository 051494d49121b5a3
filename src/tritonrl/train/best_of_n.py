"""Best-of-N rejection-sampling fine-tuning: sample, verify, keep the best, fine-tune, repeat.

    tritonrl rl --algo best-of-n --config configs/smoke.yaml --set best_of_n.rounds=2

Each round r (``best_of_n``):
  1. generate ``n`` completions per task (``tritonrl.common.generation.HFGenerator``, sampling at ``rl.temperature``),
     ``batch_size`` tasks a call;
  2. verify each call's completions (the same reward as GRPO) while the next call generates, saving them as they
     are judged (``sample_round``);
  3. keep per task the ``top_k`` best with reward >= ``min_reward`` (``reward_weighted``: every sample with
     reward > 0, repeated ``round(reward * copies_per_reward)`` times, so better kernels weigh more);
  4. SFT on the kept (prompt, completion) pairs with TRL's SFTTrainer (LoRA as configured), save the merged
     model as ``round-r/model``; the next round samples from it.
Rounds are recorded in ``rounds.json``; samples in ``round-r/samples.jsonl``, so ``--resume`` skips finished
rounds, reuses the samples of an interrupted one (those judged before the kill, when it was still sampling) and
resumes its SFT from the newest complete checkpoint.

Several processes (``accelerate launch``, DDP or ZeRO-2): the sampler lives on the rank's device (the training
arguments' ``device``); each rank samples and verifies its share of the tasks (``ranks.shard``) with its own
verifier into ``round-r/samples.rank-K-of-N.jsonl``; after a barrier the main process merges the shards into
``samples.jsonl`` (task order) and every rank fine-tunes on the same kept set (the trainer splits the batches).
ZeRO-3 and FSDP are refused: sampling needs the whole model on every rank.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from tritonrl.common import ranks
from tritonrl.common.generation import HFGenerator, Sampling
from tritonrl.common.llm import load_model
from tritonrl.common.manifest import atomic_write_text
from tritonrl.common.prompts import build_messages, load_template
from tritonrl.common.ranks import rank_verifier
from tritonrl.common.stages import StageResult, init_model_path, stage_name
from tritonrl.config import TrainingConfig
from tritonrl.errors import ConfigError
from tritonrl.tasks.model import KernelTask
from tritonrl.train.checkpoints import latest_complete_checkpoint
from tritonrl.train.data import load_training_tasks, to_dataset
from tritonrl.train.reward_adapters import VerifierReward
from tritonrl.train.reward_overlap import BackgroundVerification
from tritonrl.train.sft import sft_trainer_args
from tritonrl.train.stage_session import StageSession, peft_config, save_merged

STAGE = stage_name("best-of-n")


@dataclass
class ScoredSample:
    """One sampled completion of a task with its reward (``tritonrl.evaluation.metrics.Sample`` is a verdict for the metrics)."""

    task_key: str
    prompt: list[dict]
    completion: str
    reward: float = 0.0
    correct: bool = False


@dataclass
class RoundRecord:
    round: int
    model: str
    samples: int
    kept: int
    mean_reward: float
    correct_rate: float


def select(samples: list[ScoredSample], top_k: int, min_reward: float, reward_weighted: bool = False,
           copies_per_reward: float = 2.0) -> list[ScoredSample]:
    """The training set of one round (see the module docstring for the rule)."""
    by_task: dict[str, list[ScoredSample]] = {}
    for s in samples:
        by_task.setdefault(s.task_key, []).append(s)
    kept: list[ScoredSample] = []
    for group in by_task.values():
        ranked = sorted(group, key=lambda s: s.reward, reverse=True)
        if reward_weighted:
            for s in [s for s in ranked if s.reward > 0][:top_k]:
                kept.extend([s] * max(1, round(s.reward * copies_per_reward)))
        else:
            kept.extend([s for s in ranked if s.reward >= min_reward][:top_k])
    return kept


def sample_round(model, tokenizer, tasks: list[KernelTask], config: TrainingConfig, reward: VerifierReward,
                 partial: Path | None = None, stop: Callable[[], bool] | None = None) -> list[ScoredSample] | None:
    """``best_of_n.n`` samples of every task, judged, in task order. Tasks are sampled ``best_of_n.batch_size`` to
    a ``generate`` call; a call's samples are judged while the next call generates (the reward's own verifier in
    a background thread, ``reward_overlap.BackgroundVerification``; the GPU's lease held shared while generating,
    so a timing run has the GPU alone), and each judged call is appended to ``partial`` as one line: an
    interrupted round resumes with the tasks not saved there (a line cut short by the kill is dropped). When
    ``stop()`` turns true (a SIGTERM, a pre-emption notice) no further call starts: the calls drawn are judged and
    saved, and None is returned."""
    template = load_template(config.data.prompt_template)
    bon = config.best_of_n
    # no seed: the run's RNG (the trainer seeded it); rl.top_p as GRPO and RLOO sample (1.0, the default: off)
    sampling = Sampling(temperature=config.rl.temperature, top_p=config.rl.top_p,
                        max_new_tokens=config.rl.max_completion_length, batch_size=bon.batch_size)
    generator = HFGenerator(model, tokenizer, sampling)
    saved = _load_partial(partial)
    done = {s.task_key for s in saved}
    todo = [t for t in tasks if t.key not in done]
    background = BackgroundVerification(_gpu_lease(model))
    reward.background = background
    progress = _RoundProgress(len(tasks), len(done), sum(s.correct for s in saved) / max(1, len(saved)))
    pending: list[ScoredSample] | None = None
    stopped = False
    try:
        for start in range(0, len(todo), bon.batch_size):
            if stop is not None and stop():
                stopped = True
                break
            chunk = todo[start:start + bon.batch_size]
            prompts = [build_messages(t, template) for t in chunk]
            background.hold_gpu()
            try:
                texts = generator.generate(prompts, bon.n)
            finally:
                background.release_gpu()
            if pending is not None:  # the previous call's verdicts, judged while this one generated
                saved += _judged(reward, pending, partial, progress)
            pending = [ScoredSample(t.key, p, c) for t, p, group in zip(chunk, prompts, texts, strict=True)
                       for c in group]
            background.submit(reward, [s.completion for s in pending], [s.task_key for s in pending])
        if pending is not None:
            saved += _judged(reward, pending, partial, progress)
    finally:
        reward.background = None
        background.close()
        progress.close()
    if stopped:
        return None
    order = {t.key: i for i, t in enumerate(tasks)}
    return sorted(saved, key=lambda s: order[s.task_key])  # stable: each task's samples as drawn


def _judged(reward: VerifierReward, samples: list[ScoredSample], partial: Path | None,
            progress: _RoundProgress) -> list[ScoredSample]:
    """``samples`` with their verdicts (collected from the background), appended to ``partial`` as one line."""
    rewards, results = reward.score([s.completion for s in samples], [s.task_key for s in samples])
    for s, r, res in zip(samples, rewards, results, strict=True):
        s.reward, s.correct = float(r), bool(res.correct)
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("a") as f:
            f.write(json.dumps([asdict(s) for s in samples]) + "\n")
            f.flush()
            os.fsync(f.fileno())
    progress.update(samples)
    return samples


def _load_partial(path: Path | None) -> list[ScoredSample]:
    """The judged calls an interrupted round saved; a last line cut short by the kill is not one of them, and is
    cut off the file (the calls appended next start on a line of their own)."""
    if path is None or not path.exists():
        return []
    text = path.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
        atomic_write_text(path, text)
    samples: list[ScoredSample] = []
    for line in text.splitlines():
        try:
            samples += [ScoredSample(**row) for row in json.loads(line)]
        except (json.JSONDecodeError, TypeError):
            continue
    return samples


def _gpu_lease(model):
    """The GPU's file lock when sampling on CUDA (a timing run of the verifier takes it exclusive), else None."""
    device = getattr(model, "device", None)
    if getattr(device, "type", None) != "cuda":
        return None
    from tritonrl.common.ranks import rank_gpu
    from tritonrl.verify.judge.gpu_lock import GpuFileLock

    return GpuFileLock(rank_gpu())


class _RoundProgress:
    """Tasks sampled and judged so far: a tqdm bar on a terminal, else a line after each call (a job's log)."""

    def __init__(self, total: int, done: int, correct_rate: float):
        from tqdm import tqdm

        self.total, self.done, self.samples = total, done, 0
        self.correct = 0
        self.started = time.monotonic()
        self.terminal = sys.stderr.isatty() and ranks.is_main()
        self.bar = tqdm(total=total, initial=done, desc="best-of-n", unit="task", disable=not self.terminal)
        if done:
            _say(f"best-of-n: resuming the round with {done} of {total} tasks sampled and judged "
                f"({correct_rate:.1%} correct)")

    def update(self, samples: list[ScoredSample]) -> None:
        tasks = len({s.task_key for s in samples})
        self.done += tasks
        self.samples += len(samples)
        self.correct += sum(s.correct for s in samples)
        rate = f"{self.correct / max(1, self.samples):.1%} correct"
        self.bar.set_postfix_str(rate, refresh=False)
        self.bar.update(tasks)
        if not self.terminal and ranks.is_main():
            _say(f"best-of-n: {self.done}/{self.total} tasks sampled and judged ({rate} of this run's "
                f"{self.samples}), {time.monotonic() - self.started:.0f} s")

    def close(self) -> None:
        self.bar.close()


def _say(message: str) -> None:
    print(f"tritonrl: {message}", file=sys.stderr, flush=True)


def _load_samples(path: Path) -> list[ScoredSample] | None:
    if not path.exists():
        return None
    return [ScoredSample(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def _save_samples(path: Path, samples: list[ScoredSample]) -> None:
    atomic_write_text(path, "".join(json.dumps(asdict(s)) + "\n" for s in samples))


def _load_rounds(path: Path) -> list[RoundRecord]:
    return [RoundRecord(**r) for r in json.loads(path.read_text())] if path.exists() else []


def shard_path(round_dir: Path, index: int, count: int) -> Path:
    """Rank ``index``'s samples when ``count`` ranks share the round (a resume with another count re-samples)."""
    return round_dir / f"samples.rank-{index}-of-{count}.jsonl"


def merge_shards(shards: list[list[ScoredSample]], tasks: list[KernelTask]) -> list[ScoredSample]:
    """The ranks' samples as one list in task order (each task's samples in the order they were drawn)."""
    order = {t.key: i for i, t in enumerate(tasks)}
    merged = [s for shard in shards for s in shard]
    return sorted(merged, key=lambda s: order[s.task_key])


def sample_shards(model, tokenizer, tasks: list[KernelTask], config: TrainingConfig, reward: VerifierReward,
                  round_dir: Path, session: StageSession | None = None) -> list[ScoredSample] | None:
    """This rank samples its share of ``tasks`` into its own shard; the main process merges every shard into
    ``samples.jsonl``; every rank returns the merged samples. A finished merge (a resume) is reused as is. A stop
    asked of ``session`` while sampling returns None on every rank (agreed after sampling), the judged calls
    saved for the resume."""
    merged_path = round_dir / "samples.jsonl"
    if not ranks.any_rank(not merged_path.exists()):
        return _load_samples(merged_path)
    count = ranks.world_size()
    own = shard_path(round_dir, ranks.rank(), count)
    if not own.exists():
        partial = own.with_suffix(".partial.jsonl")
        stop = (lambda: session.stopped) if session is not None else None
        samples = sample_round(model, tokenizer, ranks.shard(tasks), config, reward, partial, stop)
        if samples is not None:
            _save_samples(own, samples)
            partial.unlink(missing_ok=True)
    if session is not None and session.agreed_stop():  # every rank asks here, whether it sampled or not
        return None
    ranks.barrier()
    if ranks.is_main():
        shards = [_load_samples(shard_path(round_dir, i, count)) or [] for i in range(count)]
        _save_samples(merged_path, merge_shards(shards, tasks))
    ranks.barrier()
    return _load_samples(merged_path)


def finetune_round(config: TrainingConfig, session: StageSession, round_dir: Path, args, model, tokenizer,
                   kept: list[ScoredSample]):
    """SFT on the kept samples; returns the trainer (``session.agreed_stop()`` tells whether it finished)."""
    from trl import SFTTrainer

    rows = [{"prompt": s.prompt, "completion": [{"role": "assistant", "content": s.completion}]} for s in kept]
    trainer = SFTTrainer(model=model, args=args, train_dataset=to_dataset(rows), processing_class=tokenizer,
                         peft_config=peft_config(config), callbacks=session.callbacks())
    resume = latest_complete_checkpoint(round_dir / "checkpoints") if config.run.resume else None
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    return trainer


def round_args(config: TrainingConfig, session: StageSession, round_dir: Path):
    """The round's SFT arguments, built before its model is loaded (they set up the ranks and the device)."""
    args = sft_trainer_args(config, session, max_steps=config.best_of_n.sft_steps_per_round)
    args.output_dir = str(round_dir / "checkpoints")
    return args


def save_round_model(trainer, tokenizer, out_dir: Path) -> None:
    save_merged(trainer, out_dir)
    if ranks.is_main():
        tokenizer.save_pretrained(str(out_dir))
    ranks.barrier()  # the next round loads it on every rank


def run_best_of_n(config: TrainingConfig, verifier=None) -> StageResult:
    if ranks.sharded_launch():
        raise ConfigError(f"best-of-n samples with the whole model on every rank; {ranks.sharded_launch()} shards "
                          "it: launch with configs/accelerate/ddp.yaml or zero2.yaml")
    bon = config.best_of_n
    tasks = load_training_tasks(config.data)[: bon.tasks_per_round or None]
    reward = VerifierReward({t.key: t for t in tasks}, verifier=verifier or rank_verifier(config.verify),
                            verify_config=config.verify, reward_config=config.reward)
    steps, last = 0, None
    with StageSession(config, STAGE) as session:
        init = init_model_path(config, session.manifest)
        if ranks.is_main():
            session.manifest.record(STAGE, init_model=init)
        rounds_path = session.stage_dir / "rounds.json"
        rounds = _load_rounds(rounds_path) if config.run.resume else []
        model_path = rounds[-1].model if rounds else init
        for r in range(len(rounds), bon.rounds):
            if session.agreed_stop():
                break
            round_dir = session.stage_dir / f"round-{r}"
            args = round_args(config, session, round_dir)
            model, tokenizer = load_model(config.model, model_path)
            model.to(args.device)  # sample on this rank's accelerator, not the CPU
            samples = sample_shards(model, tokenizer, tasks, config, reward, round_dir, session)
            if samples is None:  # stopped while sampling: the judged calls are saved, the round resumes from them
                break
            kept = select(samples, bon.top_k, bon.min_reward, bon.reward_weighted, bon.copies_per_reward)
            if kept:
                trainer = finetune_round(config, session, round_dir, args, model, tokenizer, kept)
                steps += trainer.state.global_step
                if session.agreed_stop():  # not this rank's own flag: save_round_model is collective
                    break
                save_round_model(trainer, tokenizer, round_dir / "model")
                model_path = str(round_dir / "model")
            last = RoundRecord(r, model_path, len(samples), len(kept),
                               sum(s.reward for s in samples) / max(1, len(samples)),
                               sum(s.correct for s in samples) / max(1, len(samples)))
            rounds.append(last)
            if ranks.is_main():
                atomic_write_text(rounds_path, json.dumps([asdict(x) for x in rounds], indent=2))
        stopped = session.agreed_stop()  # every rank asks; the stage's status follows this answer
        if not stopped and ranks.is_main():
            session.manifest.record(STAGE, model=model_path, tokenizer=model_path, base_model=init,
                                    metrics=rounds_path)
    return StageResult(STAGE, session.status, str(session.run_dir), steps,
                       final_reward=last.mean_reward if last else None,
                       model_path=model_path if session.status == "done" else None, reason=session.stop_reason)
