"""One rank of the multi-process tests (``test_ranks.py``), run as a user would:

    accelerate launch --cpu --num_processes 2 tests/train/dist_worker.py OUT TINY_MODEL TEMPLATE [late-stop]

Three stages on the tiny model, each in its own run directory under OUT: SFT (1 step), GRPO where rank 1 gets
SIGTERM during its first reward call (3 steps asked), Best-of-N (1 round). Each rank records every file it
opens for writing under OUT (an audit hook, plus safetensors' and torch.save's writers, which bypass Python's
``open``; tokenizer files written by the Rust tokenizers library are not seen) and its results, in ``rank-K.json``.

``late-stop``: the same three stages, each ending with a SIGTERM that rank 1 raises in itself once its training
loop is over (``on_train_end``: after the last step's agreement and checkpoint), the race where a rank that
trusted its own flag skipped ``final/`` while the other waited for it in a collective.
"""

import json
import os
import signal
import sys

OUT, TINY, TEMPLATE = sys.argv[1:4]
MODE = sys.argv[4] if len(sys.argv) > 4 else "main"
WRITES: list[str] = []
# torchrun starts each rank in a session of its own: the test kills a hung rank by this id (before the audit hook,
# so it is not counted among the rank's writes)
with open(os.path.join(OUT, f"worker-{os.environ['RANK']}.pid"), "w") as _fh:
    _fh.write(str(os.getpid()))


def _record(path) -> None:
    path = os.path.abspath(os.fsdecode(path))
    if path.startswith(OUT):
        WRITES.append(os.path.relpath(path, OUT))


def _audit(event, args):
    if event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        mode, flags = args[1], args[2]
        writing = (mode is not None and any(c in mode for c in "wax+")) or \
            (mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if writing:
            _record(args[0])
    elif event == "os.rename":
        _record(args[1])


sys.addaudithook(_audit)
import safetensors.torch  # noqa: E402 - patched before transformers and peft bind it

_save_file = safetensors.torch.save_file


def _recording_save_file(tensors, filename, *args, **kwargs):
    _record(filename)
    return _save_file(tensors, filename, *args, **kwargs)


safetensors.torch.save_file = _recording_save_file

import torch  # noqa: E402 - torch.save's zip writer bypasses Python's open too

_torch_save = torch.save


def _recording_torch_save(obj, f, *args, **kwargs):
    if isinstance(f, str | os.PathLike):
        _record(f)
    return _torch_save(obj, f, *args, **kwargs)


torch.save = _recording_torch_save

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tritonrl.common import ranks  # noqa: E402
from tritonrl.config import load_config  # noqa: E402
from tritonrl.train.rl import run_rl  # noqa: E402
from tritonrl.train.sft import run_sft  # noqa: E402
from tritonrl.verify.shared.verdict import Stage, VerifyResult  # noqa: E402


class AllCorrect:
    """Fake verifier: every completion correct; optionally SIGTERMs its own process on the first call."""

    def __init__(self, sigterm_first: bool = False):
        self.sigterm_first = sigterm_first
        self.calls = 0

    def verify_many(self, items):
        if self.sigterm_first and self.calls == 0:
            os.kill(os.getpid(), signal.SIGTERM)
        self.calls += 1
        return [VerifyResult(stage=Stage.DONE, valid=True, compiled=True, tiny_correct=True, correct=True)
                for _ in items]


def config(run: str, *overrides: str):
    base = [
        f"model.name_or_path={TINY}", "model.dtype=float32", "data.levels=[1]", "data.max_tasks=2",
        f"data.prompt_template={TEMPLATE}", f"run.run_dir={os.path.join(OUT, run)}", "run.save_steps=1",
        "run.report_to=none", "sft.max_steps=1", "sft.per_device_batch_size=1", "sft.gradient_accumulation_steps=1",
        "sft.max_length=1024", "sft.use_cpu=true", "rl.num_generations=2", "rl.per_device_batch_size=2",
        "rl.max_completion_length=8", "rl.use_cpu=true", "rl.learning_rate=1e-3", "best_of_n.n=2",
        "best_of_n.top_k=1", "best_of_n.rounds=1", "best_of_n.sft_steps_per_round=1", "verify.device=cpu",
    ]
    return load_config(None, base + list(overrides))


def sigterm_rank_1_after_training() -> None:
    """Rank 1 adds a callback to every trainer that raises SIGTERM in its own process at ``on_train_end``. The
    handler runs before ``raise_signal`` returns (main thread), so no timing decides where the signal lands."""
    from transformers import TrainerCallback

    from tritonrl.train.stage_session import StageSession

    class SigtermAtTrainEnd(TrainerCallback):
        def on_train_end(self, args, state, control, **kwargs):
            signal.raise_signal(signal.SIGTERM)

    callbacks = StageSession.callbacks
    StageSession.callbacks = lambda self, stateful=None: callbacks(self, stateful) + [SigtermAtTrainEnd()]


def late_stop() -> dict:
    """SFT, GRPO and a Best-of-N round, each SIGTERMed on rank 1 after its last step."""
    if os.environ["RANK"] == "1":  # torchrun's; ranks.rank() here would build accelerate's state too early
        sigterm_rank_1_after_training()
    results = {}
    for name, stage in (("sft", lambda: run_sft(config("late-sft"))),
                        ("grpo", lambda: run_rl(config("late-grpo", "rl.steps=1"), verifier=AllCorrect())),
                        ("bon", lambda: run_rl(config("late-bon", "rl.algo=best-of-n"), verifier=AllCorrect()))):
        result = stage()
        results[name] = {"status": result.status, "step": result.global_step, "model": result.model_path}
    return results


def main() -> None:
    if MODE == "late-stop":
        results = late_stop()
        with open(os.path.join(OUT, f"late-rank-{ranks.rank()}.json"), "w") as fh:
            json.dump(results, fh)
        ranks.shutdown()  # as the tritonrl command does at its end
        return
    results = {}
    sft = run_sft(config("sft"))
    results["sft"] = {"status": sft.status, "step": sft.global_step}
    grpo = run_rl(config("grpo", "rl.steps=3"), verifier=AllCorrect(sigterm_first=ranks.rank() == 1))
    results["grpo"] = {"status": grpo.status, "step": grpo.global_step}
    bon = run_rl(config("bon", "rl.algo=best-of-n"), verifier=AllCorrect())
    results["bon"] = {"status": bon.status, "step": bon.global_step}
    results["world_size"] = ranks.world_size()
    with open(os.path.join(OUT, f"rank-{ranks.rank()}.json"), "w") as fh:
        json.dump({"results": results, "writes": sorted(set(WRITES))}, fh)
    ranks.shutdown()


if __name__ == "__main__":
    main()
