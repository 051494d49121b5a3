"""Supervised fine-tuning on (task prompt, Triton solution) pairs with TRL's SFTTrainer.

    tritonrl sft --config configs/smoke.yaml [--set sft.max_steps=10] [--resume] [--run-dir runs/x]

Rows are conversational prompt/completion pairs (``tritonrl.train.data.sft_rows``) so TRL computes the loss on
the completion only. LoRA (r=16, alpha=32, all linear projections) by default; ``lora.enabled=false`` trains
every weight. Output: stage ``sft`` of the run manifest (``model`` = the adapter or full model directory).
"""

from __future__ import annotations

from tritonrl.common.llm import load_model, resolve_model_path
from tritonrl.common.stages import SFT_STAGE, StageResult, last_logged, warmup
from tritonrl.config import TrainingConfig
from tritonrl.train.data import load_training_tasks, sft_rows, to_dataset
from tritonrl.train.stage_session import StageSession, gradient_checkpointing, peft_config, trl_args

STAGE = SFT_STAGE


def sft_trainer_args(config: TrainingConfig, session: StageSession, max_steps: int | None = None):
    from trl import SFTConfig

    sft = config.sft
    return trl_args(
        SFTConfig, **session.trainer_kwargs(),
        learning_rate=sft.learning_rate, num_train_epochs=sft.epochs,
        max_steps=max_steps if max_steps is not None else sft.max_steps,
        per_device_train_batch_size=sft.per_device_batch_size,
        gradient_accumulation_steps=sft.gradient_accumulation_steps, max_length=sft.max_length,
        **warmup(SFTConfig, sft.warmup_ratio), lr_scheduler_type=sft.lr_scheduler, bf16=sft.bf16, use_cpu=sft.use_cpu,
        **gradient_checkpointing(config),
    )


def run_sft(config: TrainingConfig) -> StageResult:
    from trl import SFTTrainer

    tasks = load_training_tasks(config.data, config.data.sft_sources)
    dataset = to_dataset(sft_rows(tasks, config.data.prompt_template))
    session = StageSession(config, STAGE)
    args = sft_trainer_args(config, session)  # first: sets up the ranks, and ZeRO-3 for the model load
    with session:
        model, tokenizer = load_model(config.model)
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=dataset,
            processing_class=tokenizer, peft_config=peft_config(config), callbacks=session.callbacks(),
        )
        trainer.train(resume_from_checkpoint=session.resume_checkpoint())
        final = None
        if not session.agreed_stop():  # every rank the same answer: all save or none (signals.agree)
            final = session.save_final(trainer, tokenizer, base_model=resolve_model_path(config.model.name_or_path),
                                       metrics={"rows": len(dataset)})
    return StageResult(STAGE, session.status, str(session.run_dir), trainer.state.global_step,
                       final_loss=last_logged(trainer.state.log_history, "loss"),
                       model_path=str(final) if final else None, reason=session.stop_reason)
