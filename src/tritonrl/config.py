"""Every default of tritonrl, as dataclasses: the one place defaults live.

YAML files in ``configs/`` override these; CLI flags override YAML (see ``load_config``).
Each extension of the verifier and of training has an on/off switch here, so an ablation is one flag.

Sections (each owned by the module named; edit a section, not its neighbours):
  VerifyConfig      -> tritonrl.verify
  RewardConfig      -> tritonrl.reward
  CurriculumConfig  -> tritonrl.curriculum
  training configs  -> tritonrl.train
  EvalConfig        -> tritonrl.evaluate
"""

from __future__ import annotations

from dataclasses import dataclass, field


# ---------------------------------------------------------------- verification (tritonrl.verify)
@dataclass
class VerifyConfig:
    """How candidates are judged. Defaults follow KernelBench's protocol, made explicit."""

    device: str = "auto"            # "auto" (cuda if available), "cpu" (Triton interpreter) or "cuda"
    strict: bool = True             # strict: no high-level torch compute in ModelNew's forward path
    timeout_s: float = 60.0         # whole-process limit per candidate (compile + all trials)
    workers: int = 0                # parallel candidate processes; 0 = one per CPU core (CPU) or per GPU
    staged: bool = True             # run the tiny-shape stage before the full trials
    multi_input: bool = True        # several trials (seeds, scaled values, alternative shapes), not just one
    num_trials: int = 5             # full-shape correctness trials (KernelBench: 5)
    seed: int = 42                  # base seed; trial seeds are derived from it
    alt_shapes: bool = True         # include alternative-shape trials among the multi-input trials
    extra_dtype: str | None = None  # e.g. "float16": an extra trial in another dtype (off: KernelBench fixes fp32)
    atol: dict[str, float] = field(default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2})
    rtol: dict[str, float] = field(default_factory=lambda: {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2})
    randomize_params: bool = True   # re-randomize parameters identically in both models (defeats default-init)
    poison_memory: bool = True      # fill freshly allocated memory with NaN (defeats stale-buffer outputs)
    timing: bool = True             # time candidate and reference (GPU only; CPU reports None)
    warmup: int = 10
    timed_trials: int = 100
    suspicious_speedup: float = 10.0  # above this the result is flagged and the speedup credit withheld
    withhold_suspicious: bool = True
    sandbox_memory_gb: float | None = 16.0  # RLIMIT_AS-style cap for candidate processes (None: no cap)
    cache_dir: str | None = None    # reference-output cache (None: a per-user temp dir)


# ---------------------------------------------------------------- reward (tritonrl.reward)
@dataclass
class RewardConfig:
    """How a VerifyResult becomes a scalar reward; see ``tritonrl.reward`` for the formulas."""

    preset: str = "correctness"        # "correctness" (default) or "staged" (partial credit, opt-in)
    speedup_weight: float = 0.3        # correctness preset: bonus weight on the clipped speedup
    max_speedup: float = 2.0           # speedups are clipped here before the bonus is computed
    # staged preset: credit for reaching each stage (0 for invalid / static failure)
    compiled_credit: float = 0.3
    tiny_credit: float = 0.5
    full_credit: float = 0.7
