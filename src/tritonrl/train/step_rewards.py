"""The reward beside training: each optimizer step of a generation waits only for its own chunk's rewards.

    rl.generation_chunks: 4
    rl.trl: {steps_per_generation: 16}     # 4 x rl.gradient_accumulation_steps: each chunk one optimizer step's batch
    rl.reward_beside_training: true

With ``rl.generation_chunks`` alone (``tritonrl.train.reward_overlap``) a generation's chunks are verified beside the
generation of the chunks after them, but TRL scores the whole generation at once (``_generate_and_score_completions``),
shuffles it and splits it among the optimizer steps it serves, so the first of those steps waits for every verdict.
Here each chunk is scored on its own, as the batch of one optimizer step: TRL's ``_generate_and_score_completions``
runs once a chunk, in a thread of its own (``ChunkScoring``) that parks at the reward (``_calculate_rewards``) until
the step that trains on the chunk asks for it. Chunk k's verification so runs beside the generation of the chunks
after it, their log-prob passes, and the optimizer steps before k's.

What stays as TRL does it: every chunk is generated, and its old log-probabilities computed, before the
generation's first optimizer step (TRL's importance weights see the policy that sampled); every model call runs on
the trainer's thread (the decode step's CUDA graphs belong to that thread: a chunk thread hands its calls over), and
a chunk thread runs only while the trainer's thread waits for it, so torch is never driven from two threads at
once. What changes: advantages are normalised over one step's batch (as TRL does when ``steps_per_generation`` =
``gradient_accumulation_steps``: with ``scale_rewards: group`` nothing changes, with ``batch`` the standard deviation
is the step's), a step's batch is one chunk's whole groups, shuffled among themselves, and the loss normaliser of the
token-level losses (``dapo``, ``cispo``, ``vespo``) counts that step's tokens. One process (a chunk's gathers would
meet other ranks' steps), GRPO, single-turn.

The GPU's lease (``reward_overlap``): the trainer holds it shared from the generation's first chunk until the last
chunk's verdicts are collected, giving it back only while a step waits for its verdicts, so the judge's timing runs
(exclusive) never share the GPU with training; with timing on they run in those waits.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future

from tritonrl.train.reward_overlap import _chunk_thread, current_chunk


class ChunkCancelled(RuntimeError):
    """A parked chunk the trainer no longer needs (a new generation, or the end of training)."""


class ChunkScoring:
    """One chunk's ``_generate_and_score_completions`` in a thread of its own, parked at the reward until
    ``finish``. The trainer's thread serves its model calls (``serve``) while it runs."""

    def __init__(self, trainer, rows: list, index: int) -> None:
        import torch

        self.index = index
        self._messages: queue.Queue = queue.Queue()  # to the trainer's thread: ("call", ...), ("reward",), ("done",)
        self._go = threading.Event()
        self._cancelled = False
        self._ended = False  # its thread said "done"
        self.result = None
        self.error: BaseException | None = None
        device = torch.cuda.current_device() if torch.cuda.is_initialized() else None
        self._thread = threading.Thread(target=self._run, args=(trainer, rows, device), daemon=True,
                                        name=f"tritonrl-chunk-{index}")
        self._thread.start()

    # ------------------------------------------------------------ the chunk's thread
    def _run(self, trainer, rows: list, device: int | None) -> None:
        import torch

        _chunk_thread.chunk = self
        try:
            if device is not None:
                torch.cuda.set_device(device)
            self.result = trainer._generate_and_score_completions(rows)
        except BaseException as exc:  # noqa: BLE001 - handed to the trainer's thread, which raises it
            self.error = exc
        finally:
            self._messages.put(("done",))

    def on_trainer_thread(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)`` run by the trainer's thread (in this thread's grad mode); its result."""
        import torch

        reply: Future = Future()
        self._messages.put(("call", fn, args, kwargs, torch.is_grad_enabled(), reply))
        return reply.result()

    def park(self) -> None:
        """At the reward: wait until the step that trains on this chunk needs it."""
        self._messages.put(("reward",))
        self._go.wait()
        if self._cancelled:
            raise ChunkCancelled(f"chunk {self.index} was not needed")

    # ------------------------------------------------------------ the trainer's thread
    def serve(self, until: str) -> None:
        """Run the chunk's model calls until it says ``until`` ("reward") or ends; raise what it raised."""
        import torch

        while not self._ended:  # a chunk TRL scored without a reward call ends without parking
            message = self._messages.get()
            if message[0] == "call":
                _, fn, args, kwargs, grad, reply = message
                try:
                    with torch.set_grad_enabled(grad):
                        reply.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # noqa: BLE001 - raised in the chunk's thread, where TRL called it
                    reply.set_exception(exc)
                continue
            if message[0] == "done":
                self._ended = True
                self._thread.join()
                break
            if message[0] == until:
                return
        if self.error is not None:
            raise self.error

    def finish(self) -> dict:
        """Let the chunk go on from the reward; TRL's scored batch of it."""
        self._go.set()
        self.serve("done")
        return self.result

    def cancel(self) -> None:
        self._cancelled = True
        self._go.set()


class StepScoredGeneration:
    """One generation of ``chunks`` chunks, each scored when the first micro-batch of its optimizer step asks."""

    def __init__(self, trainer, rows: list, chunks: int) -> None:
        n, steps = len(rows), trainer.args.steps_per_generation
        size = n // chunks
        if n % chunks or steps % chunks or size % trainer.num_generations:
            raise ValueError(f"rl.reward_beside_training: {chunks} chunks of this rank's generation of {n} completions "
                             f"({steps} micro-batches) must each hold whole groups of {trainer.num_generations}")
        self.chunks, self.micro_batches = chunks, steps // chunks  # a chunk's micro-batches: one optimizer step
        self._batches: dict[int, list] = {}
        background = trainer.reward_overlap[1]
        background.begin()
        self.parts: list[ChunkScoring] = []
        try:
            for index in range(chunks):  # generated and old log-probs computed, one after the other; each parks
                self.parts.append(ChunkScoring(trainer, rows[index * size:(index + 1) * size], index))
                self.parts[-1].serve("reward")
        except BaseException:
            self.cancel()
            background.release_gpu()
            raise
        self._background = background  # holding the GPU shared: training's steps are GPU work too (below)

    def batch(self, index: int) -> dict:
        """Micro-batch ``index`` (0 .. steps_per_generation - 1) of this generation."""
        from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

        chunk, within = divmod(index, self.micro_batches)
        if chunk not in self._batches:
            # The GPU's lease: held shared from the generation on, given back while a step waits for its verdicts
            # (the reward's collect; a timing run takes it exclusive then), taken again for the steps whose chunks
            # are still verified, so the judge's timing runs never share the GPU with this process's work.
            scored = self.parts[chunk].finish()
            if chunk < self.chunks - 1:
                self._background.hold_gpu()
            # TRL counts a generation's loss tokens and scales them to one step's; a chunk is one step's batch
            if "num_items_in_batch" in scored:
                scored["num_items_in_batch"] = scored["num_items_in_batch"] * self.chunks
            self._batches[chunk] = split_tensor_dict(shuffle_sequence_dict(scored), self.micro_batches)
        return self._batches[chunk][within]

    def cancel(self) -> None:
        for part in self.parts:
            part.cancel()
        if hasattr(self, "_background"):
            self._background.release_gpu()


def with_step_rewards(trainer_cls):
    """``trainer_cls`` (GRPOTrainer, already ``with_reward_overlap``) scoring each chunk as its own step's batch
    when ``self.step_rewards`` is set (the chunks a generation)."""

    class StepRewardsTrainer(trainer_cls):
        step_rewards: int = 0

        def _prepare_inputs(self, generation_batch):
            if not self.step_rewards or not self.model.training:
                return super()._prepare_inputs(generation_batch)
            every = self.args.steps_per_generation * self.num_iterations
            if self._step % every == 0 or self._buffered_inputs is None:
                if isinstance(self._buffered_inputs, StepScoredGeneration):
                    self._buffered_inputs.cancel()
                self._buffered_inputs = StepScoredGeneration(self, generation_batch, self.step_rewards)
            return self._buffered_inputs.batch(self._step % self.args.steps_per_generation)

        def _calculate_rewards(self, *args, **kwargs):
            chunk = current_chunk()
            if chunk is not None:
                chunk.park()
            return super()._calculate_rewards(*args, **kwargs)

        def _get_per_token_logps_and_entropies(self, *args, **kwargs):
            chunk = current_chunk()
            if chunk is None:
                return super()._get_per_token_logps_and_entropies(*args, **kwargs)
            return chunk.on_trainer_thread(super()._get_per_token_logps_and_entropies, *args, **kwargs)

    StepRewardsTrainer.__name__ = f"StepRewards{trainer_cls.__name__}"
    return StepRewardsTrainer


def install_step_rewards(trainer, chunks: int) -> None:
    """Turn the reward beside training on for ``trainer`` (one process only)."""
    from tritonrl.errors import ConfigError

    if trainer.accelerator.num_processes > 1:
        raise ConfigError(f"rl.reward_beside_training=true runs in one process ({trainer.accelerator.num_processes} "
                          "here: a chunk's gathers would meet other ranks' steps); set it false")
    trainer.step_rewards = chunks
