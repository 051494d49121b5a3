"""One training stage's lifecycle in a run directory: manifest, resume, signals, mirror, pre-emption.

    with StageSession(config, "sft") as session:
        trainer = SFTTrainer(..., args=SFTConfig(**session.trainer_kwargs()),
                             callbacks=session.callbacks({"curriculum": curriculum}))
        trainer.train(resume_from_checkpoint=session.resume_checkpoint())
        if not session.agreed_stop():  # every rank the same answer, never its own flag
            session.save_final(trainer, tokenizer)

Layout: ``<run_dir>/manifest.json``, ``<run_dir>/<stage>/checkpoints/checkpoint-N/`` (each with ``COMPLETE``
once whole), ``<run_dir>/<stage>/final/`` (model or adapter + tokenizer), ``config.json``, ``metrics.json``.
On SIGTERM/SIGINT/pre-emption the trainer saves and stops, the stage is marked ``interrupted`` and the mirror
is pushed once more; ``--resume`` continues from the newest complete checkpoint (pulled from the mirror
first when the local run directory is gone).

Under ``accelerate launch`` every rank enters the session and calls ``save_final``; the main process alone
writes the manifest, ``config.json``, ``final/`` and ``metrics.json``, each after a barrier where other ranks'
work must come first (``tritonrl.common.ranks``). Whether to write ``final/`` at all is ``agreed_stop()``, asked
by every rank after ``train()``; the stage's status follows the last such answer.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path
from typing import Any, Self

from tritonrl.common import ranks
from tritonrl.common.manifest import RunManifest, atomic_write_text
from tritonrl.common.signals import SignalHandlers, StopCallback, StopRequest, agree
from tritonrl.config import TrainingConfig
from tritonrl.errors import ConfigError
from tritonrl.train.checkpoints import (
    CheckpointCallback,
    Stateful,
    latest_complete_checkpoint,
    load_extra_state,
)
from tritonrl.train.mirror import Mirror, MirrorThread, safe_push
from tritonrl.train.preemption import PreemptionWatcher


class StageSession:
    def __init__(self, config: TrainingConfig, stage: str):
        self.config = config
        self.stage = stage
        self.run_dir = Path(config.run.run_dir)
        self.stage_dir = self.run_dir / stage
        self.checkpoint_dir = self.stage_dir / "checkpoints"
        self.manifest = RunManifest(self.run_dir)
        self.request = StopRequest()
        self.mirror = Mirror(config.run.mirror_url, self.run_dir) if config.run.mirror_url else None
        self._signals = SignalHandlers(self.request)
        self._threads: list = []
        self.status: str | None = None
        self._stop_agreed: bool | None = None  # the last agreed_stop() answer

    @property
    def stopped(self) -> bool:
        """This rank's own flag, for logging only: it can differ between ranks, so decisions use agreed_stop()."""
        return self.request.is_set()

    def agreed_stop(self) -> bool:
        """Whether any rank asked to stop, the same answer on every rank (each must call it at the same point;
        ``signals.agree``). Stages ask after ``train()``, before ``save_final``: a SIGTERM that lands on one rank
        after the last agreed step sets that rank's flag alone, and a rank that skipped ``save_final`` on its own
        flag left the others waiting in its collectives forever. The stage's status is the last answer, so a
        signal that lands later (while ``final/`` is written) cannot mark a finished stage interrupted on some
        ranks and done on others."""
        self._stop_agreed = agree(self.request)
        return self._stop_agreed

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> Self:
        """Main process: pull the mirror, write the manifest and config; other ranks wait, then check alike."""
        use_torch_threads(self.config.run)
        if ranks.is_main():
            self._pull_mirror()
        ranks.barrier()
        self._check_run_dir()  # every rank reads the same files: all raise together, nobody waits forever
        ranks.barrier()
        if ranks.is_main():
            self.stage_dir.mkdir(parents=True, exist_ok=True)
            self.manifest.start(self.stage)
            atomic_write_text(self.stage_dir / "config.json", json.dumps(dataclasses.asdict(self.config), indent=2))
            self.manifest.record(self.stage, config=self.stage_dir / "config.json")
        ranks.barrier()
        self._signals.__enter__()
        if self.config.run.preemption_watch:
            self._threads.append(PreemptionWatcher(self.request, self.config.run.preemption_url,
                                                   self.config.run.preemption_poll_s).start())
        if self.mirror and ranks.is_main():
            self._threads.append(MirrorThread(self.mirror, self.config.run.mirror_interval_s).start())
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._signals.__exit__()
        for thread in self._threads:
            thread.stop()
        if exc_type is not None:
            self.status = "failed"  # after an error another rank may never arrive: no collective then
        else:
            self.status = "interrupted" if self._final_stop_answer() else "done"
            ranks.barrier()
        if not ranks.is_main():
            return
        if exc_type is not None:
            self.manifest.finish(self.stage, "failed", error=f"{exc_type.__name__}: {exc}")
        elif self.status == "interrupted":
            self.manifest.finish(self.stage, "interrupted", reason=self.request.reason)
        else:
            self.manifest.finish(self.stage, "done")
        safe_push(self.mirror)

    @property
    def stop_reason(self) -> str | None:
        """Why an interrupted stage stopped (``SIGINT``, ``SIGTERM``, ``preempted``; the exit status follows it,
        ``tritonrl.common.signals.exit_status``), None for one that did not."""
        return self.request.reason if self.status == "interrupted" else None

    def _final_stop_answer(self) -> bool:
        """The stage's last agreed answer (asked now if it never asked); a request raised after it is noted, not
        obeyed: the stage ran to its end."""
        stopped = self._stop_agreed if self._stop_agreed is not None else self.agreed_stop()
        if not stopped and self.stopped:
            warnings.warn(f"{self.request.reason} arrived after {self.stage}'s last step; the stage finished",
                          stacklevel=3)
        return stopped

    def _pull_mirror(self) -> None:
        if self.config.run.resume and self.mirror and not self.manifest.path.exists() and self.mirror.exists():
            self.mirror.pull()

    def _check_run_dir(self) -> None:
        entry = self.manifest.stage(self.stage)
        if not self.config.run.resume and entry is not None and self.checkpoint_dir.exists():
            raise ConfigError(f"{self.stage_dir} already holds a {self.stage} stage ({entry.get('status')}); "
                              "pass --resume to continue it or choose another --run-dir")

    # ------------------------------------------------------------ trainer wiring
    def trainer_kwargs(self) -> dict[str, Any]:
        """Arguments every TRL config class takes: where and how often to checkpoint and log. The Trainer keeps
        every checkpoint: ``CheckpointCallback`` deletes old ones (``run.save_total_limit``) once the new one is
        marked complete, which the Trainer's own rotation (before the marker) would not wait for."""
        run = self.config.run
        kwargs = {
            "output_dir": str(self.checkpoint_dir),
            "save_strategy": "steps",
            "save_steps": run.save_steps,
            "save_total_limit": None,
            "logging_steps": run.logging_steps,
            "report_to": run.report_to,
            "seed": run.seed,
            "full_determinism": run.deterministic,
        }
        if self.config.lora.enabled:
            # Every adapter takes part in every forward. transformers leaves DDP's search for unused parameters
            # on for a model it does not recognise as its own, a PEFT wrapper included: an extra walk of the
            # autograd graph each step, and torch's warning on every rank (the 1.5B DDP rehearsal, 2026-11-30).
            kwargs["ddp_find_unused_parameters"] = False
        return kwargs

    def callbacks(self, stateful: dict[str, Stateful] | None = None) -> list:
        self._stateful = stateful or {}
        after_save = (lambda _checkpoint: safe_push(self.mirror)) if self.mirror and ranks.is_main() else None
        return [CheckpointCallback(self._stateful, after_save, keep=self.config.run.save_total_limit),
                StopCallback(self.request)]

    def resume_checkpoint(self) -> str | None:
        """Newest complete checkpoint when resuming (restoring our extra state from it), else None."""
        if not self.config.run.resume:
            return None
        checkpoint = latest_complete_checkpoint(self.checkpoint_dir)
        if checkpoint is None:
            return None
        load_extra_state(checkpoint, getattr(self, "_stateful", {}))
        return str(checkpoint)

    def save_final(self, trainer, tokenizer, base_model: str, metrics: dict[str, Any] | None = None) -> Path:
        """Save the trained model and tokenizer, and name them in the manifest. Every rank calls it.

        The weights are gathered from every rank (ZeRO-3, FSDP) and written whole by the main process, which
        then checks they are there before the manifest names them. A LoRA trained on top of a *merged* earlier
        adapter (RL after LoRA SFT) is saved merged: its own ``adapter_config.json`` would name the original base
        and silently drop the earlier stage's weights.
        """
        from tritonrl.common.llm import is_adapter_dir

        final = self.stage_dir / "final"
        if is_adapter_dir(base_model):
            save_merged(trainer, final)
        else:
            save_whole(trainer, final)
        missing = None
        if ranks.is_main():
            try:
                check_weights(final)
            except ConfigError as exc:
                missing = exc
        if ranks.any_rank(missing is not None):  # every rank fails together, none waits in a barrier
            raise missing or ConfigError(f"{final}: the main process found no loadable weights there")
        if ranks.is_main():
            tokenizer.save_pretrained(str(final))
            metrics_path = self.stage_dir / "metrics.json"
            summary = {"global_step": trainer.state.global_step, "log_history": trainer.state.log_history,
                       **(metrics or {})}
            atomic_write_text(metrics_path, json.dumps(summary, indent=2, default=str))
            self.manifest.record(self.stage, model=final, tokenizer=final, base_model=base_model,
                                 metrics=metrics_path)
        ranks.barrier()  # nobody reads final/ (or the manifest) before it is complete
        return final


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors",
                "pytorch_model.bin", "pytorch_model.bin.index.json", "adapter_model.bin")


def use_torch_threads(run) -> None:
    """Set torch's CPU threads (intra-op) for this process to ``run.torch_threads``, when it is set.

    A tiny model's steps are too small to share between cores: on a busy 2-core machine two threads wait on each
    other and a smoke SFT step took 1.9 s with two threads, 0.54 s with one (README, "Times")."""
    if run.torch_threads is not None:
        import torch

        torch.set_num_threads(run.torch_threads)


def check_weights(out_dir: Path) -> None:
    """A saved model directory must hold loadable weights; ZeRO-3 without 16-bit gathering or a sharded FSDP
    state dict would leave only shards, which ``from_pretrained`` cannot read."""
    if not any((out_dir / name).exists() for name in WEIGHT_FILES):
        raise ConfigError(f"{out_dir} holds no loadable weights ({', '.join(p.name for p in out_dir.iterdir())}); "
                          "with ZeRO-3 set zero3_save_16bit_model: true in the accelerate config")


def save_whole(trainer, out_dir: Path) -> None:
    """``Trainer.save_model`` on every rank (it gathers ZeRO-3 16-bit weights; the main process writes), with
    FSDP switched to a full state dict for this save (checkpoints stay sharded)."""
    plugin = getattr(trainer.accelerator.state, "fsdp_plugin", None)
    if plugin is not None and "FULL_STATE_DICT" not in str(plugin.state_dict_type):
        plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(str(out_dir))
    ranks.barrier()


def save_merged(trainer, out_dir: Path) -> None:
    """Save a full model, the LoRA (if any) merged into its weights. Every rank calls it; the main process
    writes. Sharded parameters (ZeRO-3, FSDP) are never merged in place: their full state dict is gathered
    and merged into a CPU copy on the main process."""
    accelerator = trainer.accelerator
    if ranks.sharded_launch():
        from tritonrl.common.llm import merged_from_state_dict

        wrapped = trainer.model_wrapped if getattr(trainer, "is_deepspeed_enabled", False) else trainer.model
        state = accelerator.get_state_dict(wrapped)  # collective: whole on the main process
        if accelerator.is_main_process:
            merged_from_state_dict(accelerator.unwrap_model(trainer.model), state).save_pretrained(str(out_dir))
    elif accelerator.is_main_process:
        model = accelerator.unwrap_model(trainer.model)
        if hasattr(model, "merge_and_unload"):
            model = model.merge_and_unload()
        model.save_pretrained(str(out_dir))
    accelerator.wait_for_everyone()


def peft_config(config: TrainingConfig):
    """PEFT LoRA config from ``config.lora``, or None for full fine-tuning."""
    if not config.lora.enabled:
        return None
    from peft import LoraConfig as PeftLoraConfig

    return PeftLoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                          target_modules=config.lora.target_modules, task_type="CAUSAL_LM")


def gradient_checkpointing(config: TrainingConfig) -> dict[str, bool]:
    """Always explicit: TRL's configs default it to *on*, so leaving it out of ``model.gradient_checkpointing:
    false`` would still checkpoint. ``trl_args`` passes it under transformers 5's name when that exists."""
    return {"gradient_checkpointing": bool(config.model.gradient_checkpointing)}


# Options whose name moved: ours -> the newer name, used when the installed config class has it. transformers 5
# calls gradient checkpointing "activation_checkpointing" and warns when the old name is given.
RENAMED_OPTIONS = {"gradient_checkpointing": "activation_checkpointing"}


def trl_args(config_cls, **kwargs):
    """Build a TRL config, dropping options this TRL release does not have (their names move between versions)."""
    known = {f.name for f in dataclasses.fields(config_cls)}
    for old, new in RENAMED_OPTIONS.items():
        if old in kwargs and new in known:
            kwargs[new] = kwargs.pop(old)
    dropped = sorted(k for k in kwargs if k not in known)
    if dropped:
        # Not silent: a setting the user made may not take effect on this TRL version.
        warnings.warn(f"{config_cls.__name__} in this TRL version has no option(s) {', '.join(dropped)}; "
                      "they are ignored", stacklevel=2)
    return config_cls(**{k: v for k, v in kwargs.items() if k in known})
