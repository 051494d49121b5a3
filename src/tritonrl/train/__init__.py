"""Training: SFT, GRPO, RLOO and Best-of-N on top of TRL, with run manifests and safe checkpoints.

Entry points (also ``tritonrl sft`` / ``tritonrl rl``): ``tritonrl.train.sft.run_sft`` and
``tritonrl.train.rl.run_rl``, which finds ``rl.algo`` in the registry ``tritonrl.common.stages`` (with
``StageResult``, the stage names and what every stage shares). Every stage writes its outputs into the run directory's ``manifest.json``
(``tritonrl.common.manifest``); the next stage reads them from there, never from a guessed path.
"""
