"""The reward beside generation: a rank's batch generated in chunks, each verified in the background at once.

    rl.generation_chunks: 4     # 1 (default): one generate call, then the reward, as TRL does

TRL computes rewards after the whole batch is generated (``_calculate_rewards``, synchronous; async reward
functions only overlap each other), and GRPO's advantages need every reward of a group (and, with
``scale_rewards: batch``, of the batch) before any backward pass. So the overlap that stays on-policy is inside
the step: the rank's prompts are generated in ``rl.generation_chunks`` equal chunks (one compiled shape), and as
each chunk finishes its completions are decoded and handed to background threads that verify them
(``BackgroundVerification``: the reward's own verifier, one ``verify_many`` per chunk; the calls of several chunks
may run at once, the verifier's slots bound the candidates in flight). The verification
of chunk k runs while chunk k+1 is generated; the last chunk's runs beside TRL's log-prob passes. When TRL then
calls the reward with the whole batch, ``VerifierReward.score`` collects the verdicts (waiting only for those
not yet in), so the rewards are exactly the serial path's verdicts of the same completions; the curriculum, the
metrics and the shuffle control see the batch as before. Logged per batch: ``verify/time_s`` (the verification's
wall seconds, overlapping calls counted once), ``verify/wait_s`` (what the step waited for it) and ``verify/hidden_fraction`` (1 - wait / time).

The verifier's timing keeps the GPU to itself: each chunk's generation holds the GPU's file lock shared
(``tritonrl.verify.judge.gpu_lock.GpuFileLock.hold(shared=True)``), as do the GPU passes after the last chunk
until the reward is collected, and the judge's timing runs hold it exclusive; so a timing run waits for the chunk
under way and the next chunk waits for the timing run. Correctness trials run beside generation (they do not
need the GPU alone). Smaller chunks leave more gaps for timing runs but a smaller batch per decode step.

While a chunk is generated, Python's thread switch interval is ``rl.generation_switch_interval_ms`` (0.5 ms): the
decode loop gives the GIL up at every token, and the judge's threads in this process would otherwise keep it up to
Python's 5 ms each time. When one generation serves several optimizer steps, ``rl.reward_beside_training``
(``tritonrl.train.step_rewards``) scores each chunk as its own step's batch, so the steps wait only for their own
chunk's verdicts.

A completion the background did not verify (TRL decoded it differently from the chunk's text, e.g. a tokenizer
with a response parser) is verified when the reward is called, and that is said once.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

_chunk_thread = threading.local()  # .chunk: the ChunkScoring a thread scores (tritonrl.train.step_rewards)


def current_chunk():
    """The chunk this thread scores with the reward beside training (``tritonrl.train.step_rewards``), or None."""
    return getattr(_chunk_thread, "chunk", None)


def current_chunk_index() -> int | None:
    chunk = current_chunk()
    return None if chunk is None else chunk.index


def _text_key(task_key: str, completion) -> tuple[str, str]:
    from tritonrl.extract import completion_text

    return task_key, completion_text(completion) or repr(completion)


def _difference(key: tuple[str, str], chunk_keys: list[tuple[str, str]]) -> str:
    """Where TRL's text of a completion (``key``) parts from the nearest chunk text of its task: a line that says
    why the two were not matched."""
    texts = [text for task, text in chunk_keys if task == key[0]]
    if not texts:
        return f"No chunk text of task {key[0]} was left over."
    ours = key[1]

    def common(text: str) -> int:
        return next((i for i, (a, b) in enumerate(zip(ours, text)) if a != b), min(len(ours), len(text)))

    nearest = max(texts, key=common)
    at = common(nearest)
    return (f"The first: {len(ours)} characters in TRL's text, {len(nearest)} in the nearest chunk text of its task; "
            f"they part at character {at}: TRL {ours[at:at + 24]!r}, the chunk {nearest[at:at + 24]!r}.")


class BackgroundVerification:
    """Chunks verified in background threads as they come; the reward ``collect``s a batch's verdicts."""

    def __init__(self, lease=None, concurrent_chunks: int = 1, switch_interval_s: float | None = None) -> None:
        # Several chunks' calls may run at once: a chunk's slowest candidate does not hold the next chunk back (the
        # local Verifier's slots bound the candidates in flight, whoever submits them).
        self._pool = ThreadPoolExecutor(max_workers=max(1, concurrent_chunks), thread_name_prefix="tritonrl-verify")
        # (chunk, text key) -> the verdicts in flight. The chunk is None, except with the reward beside training,
        # where each chunk is scored in a thread of its own (tritonrl.train.step_rewards) and collects only its own
        self._pending: dict[tuple[int | None, tuple[str, str]], deque[tuple[Future, int]]] = {}
        self._lock = threading.Lock()
        self._intervals: list[tuple[float, float]] = []  # (start, end) of each verify_many call of the generation
        self._reported = 0.0  # of their union, the seconds already reported by a collect
        self._said: set[str] = set()
        self.lease = lease  # a GpuFileLock, taken shared around this process's GPU work (None on a CPU)
        self._held = ExitStack()
        self._holding = False
        self._local = threading.local()  # the task keys of the batch this thread generates (set by the trainer)
        self.switch_interval_s = switch_interval_s  # Python's thread switch interval while a chunk is generated

    @property
    def task_keys(self) -> list[str] | None:
        """The batch's task keys, row by row (set by the trainer; a chunk thread's own)."""
        return getattr(self._local, "task_keys", None)

    @task_keys.setter
    def task_keys(self, keys: list[str] | None) -> None:
        self._local.task_keys = keys

    def begin(self) -> None:
        """A new generation: its verification seconds count from here."""
        with self._lock:
            self._intervals, self._reported = [], 0.0

    # ------------------------------------------------------------ the trainer's side
    def hold_gpu(self) -> None:
        """Hold the GPU's lease shared (no-op without one, or when held already)."""
        if self.lease is not None and not self._holding:
            self._held.enter_context(self.lease.hold(shared=True))
            self._holding = True

    def release_gpu(self) -> None:
        self._holding = False
        self._held.close()

    @contextmanager
    def generating(self):
        """Around one chunk's generate call: the GPU held shared and, with ``switch_interval_s``, Python's thread
        switch interval shortened. The decode loop waits on the GPU at every token, releasing the GIL, and the
        verification's threads in this process (the judge's) take it; at Python's default of 5 ms a thread that
        holds the GIL keeps it that long before the decode loop gets it back."""
        self.hold_gpu()
        interval = sys.getswitchinterval()
        if self.switch_interval_s is not None:
            sys.setswitchinterval(self.switch_interval_s)
        try:
            yield
        finally:
            sys.setswitchinterval(interval)
            self.release_gpu()

    def submit(self, reward, completions: list, task_key: list[str]) -> None:
        """Start verifying one chunk's ``completions`` (texts) in the background."""
        items = [reward.item(key, c) for key, c in zip(task_key, completions, strict=True)]
        future = self._pool.submit(self._verify, reward.verifier, items)
        chunk = current_chunk_index()
        with self._lock:
            for index, (key, c) in enumerate(zip(task_key, completions, strict=True)):
                self._pending.setdefault((chunk, _text_key(key, c)), deque()).append((future, index))

    def _verify(self, verifier, items: list) -> list:
        started = time.perf_counter()
        try:
            return verifier.verify_many(items)
        finally:
            with self._lock:
                self._intervals.append((started, time.perf_counter()))

    # ------------------------------------------------------------ the reward's side
    def collect(self, reward, completions, task_key) -> list:
        """The verdicts of the batch, in its order: the background's, and the rest verified now."""
        self.release_gpu()
        started = time.perf_counter()
        chunk = current_chunk_index()
        with self._lock:
            slots = [self._take((chunk, _text_key(key, c))) for key, c in zip(task_key, completions, strict=True)]
            mine = [pending for pending in self._pending if pending[0] == chunk]
            stale_keys = [pending[1] for pending in mine for _ in self._pending.pop(pending)]
        stale = len(stale_keys)
        missing = [i for i, slot in enumerate(slots) if slot is None]
        if missing:
            first = _text_key(task_key[missing[0]], completions[missing[0]])
            said = (f"{len(missing)} of {len(slots)} completions were not verified beside generation (TRL "
                    "decoded them differently from the chunk's text); verifying them now")
            self._say(f"{said}. {_difference(first, stale_keys)}", once=said)
            future = self._pool.submit(self._verify, reward.verifier,
                                       [reward.item(task_key[i], completions[i]) for i in missing])
            for index, i in enumerate(missing):
                slots[i] = (future, index)
        results = [future.result()[index] for future, index in slots]
        wait_s = time.perf_counter() - started
        if stale:
            self._say(f"{stale} completions verified beside generation were not in the reward's batch")
        with self._lock:  # the verification seconds not reported yet (calls overlapping counted once)
            covered = union_s(self._intervals)
            verify_s, self._reported = covered - self._reported, covered
        reward._verify_s, reward._wait_s, reward._hits = verify_s, wait_s, 0
        return results

    def _take(self, key):
        queue = self._pending.get(key)
        if not queue:
            return None
        slot = queue.popleft()
        if not queue:
            del self._pending[key]
        return slot

    def _say(self, message: str, once: str | None = None) -> None:
        """``message`` on stderr, once per ``once`` (default: the message itself)."""
        if (once or message) not in self._said:
            self._said.add(once or message)
            print(f"tritonrl: WARNING: {message}", file=sys.stderr, flush=True)

    def close(self) -> None:
        self.release_gpu()
        self._pool.shutdown(wait=True)


def union_s(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by the union of ``intervals`` (the verification's wall time, calls overlapping)."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def generate_in_chunks(trainer, generate, chunks: int, background: BackgroundVerification, reward,
                       prompt_ids: list, images, multimodal_fields, *args, **kwargs):
    """``generate`` (TRL's ``_generate_single_turn``) over ``chunks`` equal slices of ``prompt_ids``, each
    slice's completions submitted to ``background`` as soon as they exist. Returns what ``generate`` returns, for
    the whole batch: GRPO's (completion ids, logprobs or None), RLOO's completion ids alone."""
    n = len(prompt_ids)
    if n % chunks:
        raise ValueError(f"rl.generation_chunks = {chunks} does not divide this rank's generation batch of {n} "
                         "(rl.trl.generation_batch_size?); choose a divisor")
    if multimodal_fields:
        raise ValueError("rl.generation_chunks > 1 does not split multimodal inputs; set it to 1")
    keys = background.task_keys
    if keys is None or len(keys) != n:
        raise ValueError("rl.generation_chunks > 1: the batch's task keys are unknown (generation outside the "
                         "trainer's step)")
    if current_chunk_index() is None:
        background.begin()
    size = n // chunks
    all_ids: list = []
    all_logprobs: list | None = []
    for start in range(0, n, size):
        stop = start + size
        with background.generating():
            out = generate(prompt_ids[start:stop], images[start:stop] if images else images, multimodal_fields,
                           *args, **kwargs)
        pair = isinstance(out, tuple)
        ids, logprobs = out if pair else (out, None)
        background.submit(reward, trainer.processing_class.batch_decode(ids, skip_special_tokens=True),
                          keys[start:stop])
        all_ids.extend(ids)
        all_logprobs = None if logprobs is None or all_logprobs is None else all_logprobs + list(logprobs)
    background.hold_gpu()  # the log-prob passes that follow, until the reward is collected
    return (all_ids, all_logprobs) if pair else all_ids


def with_reward_overlap(trainer_cls):
    """``trainer_cls`` (GRPOTrainer / RLOOTrainer) generating in chunks verified in the background when
    ``self.reward_overlap`` = (chunks, BackgroundVerification, reward) is set; TRL's own path otherwise."""

    class RewardOverlapTrainer(trainer_cls):
        reward_overlap: tuple | None = None

        def _generate_and_score_completions(self, inputs):
            if self.reward_overlap is not None:
                self.reward_overlap[1].task_keys = [row.get("task_key") for row in inputs]
            return super()._generate_and_score_completions(inputs)

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, *args, **kwargs):
            if self.reward_overlap is None or self.use_vllm:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, *args, **kwargs)
            chunks, background, reward = self.reward_overlap
            generate, chunk = super()._generate_single_turn, current_chunk()
            if chunk is not None:  # the reward beside training: this thread's batch is one chunk, generated on
                generate, chunks = functools.partial(chunk.on_trainer_thread, generate), 1  # the trainer's thread
            return generate_in_chunks(self, generate, chunks, background, reward,
                                      prompt_ids, images, multimodal_fields, *args, **kwargs)

    RewardOverlapTrainer.__name__ = f"RewardOverlap{trainer_cls.__name__}"
    return RewardOverlapTrainer


def install_overlap(trainer, reward, chunks: int, device_type: str,
                    switch_interval_ms: float | None = None) -> BackgroundVerification | None:
    """Turn the overlap on for ``trainer`` (built from ``with_reward_overlap``) when ``chunks`` > 1; while a chunk is
    generated, Python's thread switch interval is ``switch_interval_ms`` (None: Python's own)."""
    if chunks <= 1 or not hasattr(reward, "item"):
        return None
    lease = None
    if device_type == "cuda":
        from tritonrl.common.ranks import rank_gpu
        from tritonrl.verify.judge.gpu_lock import GpuFileLock

        lease = GpuFileLock(rank_gpu())
    background = BackgroundVerification(lease, concurrent_chunks=chunks, switch_interval_s=(
        None if switch_interval_ms is None else switch_interval_ms / 1000))
    reward.background = background
    trainer.reward_overlap = (chunks, background, reward)
    return background
