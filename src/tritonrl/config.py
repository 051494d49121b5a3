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
    workers_per_gpu: int = 1        # GPU: candidates compiling/checking at once per GPU; timing stays exclusive
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
    warmup: int = 10                # untimed runs before timing (JIT compile, autotune); docs/timing.md
    timed_trials: int = 100         # timed runs; median and 10%-trimmed mean reported, with the spread
    suspicious_speedup: float = 10.0  # above this the result is flagged SUSPICIOUS_SPEEDUP (reward: withhold)
    compile_baseline: bool = False  # also time torch.compile(Model): timing["ref_compile_ms"], "speedup_vs_compile"
    sandbox_memory_gb: float | None = 16.0  # RLIMIT_AS-style cap for candidate processes (None: no cap)
    cache_dir: str | None = None    # reference-output cache (None: a per-user temp dir)
    static_checks: bool = True      # off only to test the runtime defences on their own
    network_isolation: bool = True  # candidate children enter an empty network namespace where permitted
    scaled_input_factor: float = 3.0  # one multi-input trial multiplies the float inputs by this
    # where candidates run (tritonrl.verify.backends; docs/scaling.md)
    backend: str = "local"          # "local" (this machine's processes) or "ray" (actors on a Ray cluster)
    ray_address: str | None = None  # None: start a local Ray instance; "auto" / "ray://host:10001": join one
    ray_num_actors: int | None = None  # None: one per GPU of the cluster (CPU-only: one per ray_cpus_per_actor)
    ray_gpus_per_actor: float | None = None  # None: 1 when the cluster has GPUs and device is not "cpu", else 0
    ray_cpus_per_actor: int = 2     # CPU cores reserved per actor (its Verifier runs this many candidates)
    ray_max_retries: int = 2        # times a batch whose actor died is retried on another actor


# ---------------------------------------------------------------- reward (tritonrl.reward)
@dataclass
class RewardConfig:
    """How a VerifyResult becomes a scalar reward; see ``tritonrl.reward`` for the formulas."""

    preset: str = "correctness"        # "correctness" (default) or "staged" (partial credit, opt-in)
    speedup_weight: float = 0.3        # correctness preset: bonus weight on the clipped speedup
    max_speedup: float = 2.0           # speedups are clipped here before the bonus is computed
    withhold_suspicious_speedup: bool = True  # no speedup credit for a result flagged SUSPICIOUS_SPEEDUP
    # staged preset: credit for reaching each stage (0 for invalid / static failure)
    compiled_credit: float = 0.3
    tiny_credit: float = 0.5
    full_credit: float = 0.7


# ---------------------------------------------------------------- curriculum (tritonrl.curriculum)
@dataclass
class CurriculumConfig:
    """Level-1/Level-2 mixing for RL prompts; the rule is documented in ``tritonrl.curriculum``."""

    enabled: bool = True
    start_p: float = 0.1            # Level-2 share of sampled prompts at the start
    end_p: float = 0.5              # Level-2 share once the ramp is complete
    trigger: float = 0.4            # rolling Level-1 correct rate that starts (and keeps advancing) the ramp
    window: int = 64                # how many recent Level-1 results the rolling rate averages
    ramp_updates: int = 20          # reward batches over which p moves linearly from start_p to end_p
    seed: int = 0


# ---------------------------------------------------------------- training (tritonrl.train)
@dataclass
class ModelConfig:
    """Which causal LM to train: a hub id or a local directory."""

    name_or_path: str = "Qwen/Qwen2.5-Coder-7B-Instruct"
    dtype: str = "auto"             # "auto", "float32", "bfloat16", "float16"
    trust_remote_code: bool = False
    attn_implementation: str | None = None  # e.g. "flash_attention_2" on GPUs; None: the library default
    gradient_checkpointing: bool = False


@dataclass
class LoraConfig:
    """PEFT LoRA adapter; ``enabled: false`` means full fine-tuning."""

    enabled: bool = True
    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: str | list[str] = "all-linear"  # every attention and MLP projection


@dataclass
class DataConfig:
    """Where training tasks come from."""

    source: str = "bundled"         # "bundled", a KernelBench dir, or a KernelBook .jsonl/.parquet/hub id
    sft_sources: list[str] = field(default_factory=lambda: ["bundled"])  # pairs need a task.solution
    levels: list[int] = field(default_factory=lambda: [1, 2])
    tasks: list[str] | None = None  # only these task names (None: all at `levels`)
    kernelbench_dir: str | None = None  # KernelBook rows matching this clone's tasks are dropped ($KERNELBENCH_DIR)
    max_tasks: int | None = None
    prompt_template: str | None = None


@dataclass
class RunConfig:
    """Run directory, checkpoints, resume, mirroring and pre-emption (shared by every stage)."""

    run_dir: str = "runs/default"
    resume: bool = False
    save_steps: int = 50
    save_total_limit: int | None = 3
    mirror_url: str | None = None   # fsspec URL (gs://, s3://, file://, memory://); None: no mirror
    mirror_interval_s: float = 600.0
    preemption_watch: bool = False
    preemption_url: str | None = None  # None: probe GCP and AWS metadata endpoints
    preemption_poll_s: float = 5.0
    report_to: str | list[str] = "none"  # passed to transformers: "none", "wandb", "tensorboard", ...
    seed: int = 0
    logging_steps: int = 1


@dataclass
class SftRunConfig:
    """Supervised fine-tuning on (task prompt, Triton solution) pairs via TRL's SFTTrainer."""

    learning_rate: float = 2e-4
    epochs: float = 1.0
    max_steps: int = -1             # > 0 overrides epochs
    per_device_batch_size: int = 1
    gradient_accumulation_steps: int = 8
    max_length: int | None = 4096
    warmup_ratio: float = 0.03
    bf16: bool = False
    use_cpu: bool = False


@dataclass
class BestOfNConfig:
    """Rejection-sampling fine-tuning: sample n, verify, keep the top k above a threshold, SFT, repeat."""

    n: int = 10
    top_k: int = 3
    min_reward: float = 1.0         # correctness preset: 1.0 = correct
    rounds: int = 3
    reward_weighted: bool = False   # keep every sample with reward > 0, repeated round(reward * copies_per_reward)
    copies_per_reward: float = 2.0
    tasks_per_round: int | None = None
    sft_steps_per_round: int = -1   # -1: one epoch over the kept samples


@dataclass
class RLRunConfig:
    """On-policy RL with the verifier's reward (GRPO, RLOO) through TRL; Best-of-N settings in ``best_of_n``."""

    algo: str = "grpo"              # "grpo", "rloo" or "best-of-n"
    num_generations: int = 8
    max_completion_length: int = 2048
    max_prompt_length: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0              # nucleus sampling for rollouts (< 1 drops the tail tokens that break long code)
    learning_rate: float = 1e-6
    steps: int = 200
    per_device_batch_size: int = 8  # completions per device per step (a multiple of num_generations' share)
    gradient_accumulation_steps: int = 1
    beta: float = 0.0               # KL coefficient (0: no reference model)
    bf16: bool = False
    use_cpu: bool = False
    use_vllm: bool = False
    vllm_mode: str = "colocate"     # "server" or "colocate"
    vllm_server_base_url: str | None = None  # server mode: e.g. "http://gen-node:8000" (trl vllm-serve)
    curriculum: bool = True         # sample prompts by the adaptive curriculum (off: uniform, TRL's sampler)
    async_reward: bool = False      # verify in a thread via TRL's async reward functions
    init_from: str | None = None    # a manifest stage ("sft") whose model to start from; None: model.name_or_path
    shuffle_rewards: bool = False   # control run: permute each batch's rewards across its completions (no signal)
    verify_cache: bool = False      # verify each distinct (task, extracted code) once per run; reuse the verdict


@dataclass
class TrainingConfig:
    """Everything one ``tritonrl sft`` / ``tritonrl rl`` run needs; YAML files in configs/ fill this."""

    model: ModelConfig = field(default_factory=ModelConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    data: DataConfig = field(default_factory=DataConfig)
    run: RunConfig = field(default_factory=RunConfig)
    sft: SftRunConfig = field(default_factory=SftRunConfig)
    rl: RLRunConfig = field(default_factory=RLRunConfig)
    best_of_n: BestOfNConfig = field(default_factory=BestOfNConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)


# ---------------------------------------------------------------- loading (YAML + key=value overrides)
def load_config(path: str | None, overrides: list[str] | None = None, schema: type = TrainingConfig):
    """Build ``schema`` from its defaults, then the YAML file at ``path``, then ``key.sub=value`` overrides.

    Values in overrides are parsed as YAML scalars/lists (``rl.steps=3``, ``lora.enabled=false``,
    ``data.levels=[1]``). Unknown keys and wrongly typed values raise ``ConfigError`` with one line.
    """
    from tritonrl.errors import ConfigError

    data: dict = {}
    if path:
        data = _read_yaml(path)
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        _set_dotted(data, key.strip().split("."), _parse_scalar(raw))
    return _build(schema, data, prefix="")


def _read_yaml(path: str) -> dict:
    import yaml

    from tritonrl.errors import ConfigError

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def _parse_scalar(raw: str):
    import yaml

    try:
        return yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        return raw


def _set_dotted(data: dict, keys: list[str], value) -> None:
    for key in keys[:-1]:
        child = data.setdefault(key, {})
        if not isinstance(child, dict):
            child = data[key] = {}
        data = child
    data[keys[-1]] = value


def _build(schema: type, data: dict, prefix: str):
    import dataclasses
    import typing

    from tritonrl.errors import ConfigError

    if not isinstance(data, dict):
        raise ConfigError(f"config section {prefix.rstrip('.') or '<root>'} must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(schema)}
    hints = typing.get_type_hints(schema)
    kwargs = {}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"unknown config key {prefix}{key} (known: {', '.join(sorted(fields))})")
        hint = hints[key]
        if dataclasses.is_dataclass(hint):
            kwargs[key] = _build(hint, value or {}, prefix=f"{prefix}{key}.")
        else:
            kwargs[key] = _check_type(value, hint, f"{prefix}{key}")
    return schema(**kwargs)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _check_type(value, hint, name: str):
    """Accept values of the annotated type (ints for floats too); reject the rest with one line."""
    import types
    import typing

    from tritonrl.errors import ConfigError

    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for option in options:
        base = typing.get_origin(option) or option
        if option is type(None) and value is None:
            return None
        if base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if base is float and isinstance(value, str) and _is_float(value):  # YAML 1.1 reads "1e-3" as a string
            return float(value)
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (bool, str, list, dict) and isinstance(value, base):
            return value
        if base is typing.Any:
            return value
    raise ConfigError(f"config key {name} = {value!r} does not match type {hint}")


# ---------------------------------------------------------------- evaluation and pipeline (tritonrl.evaluate, .pipeline)
@dataclass
class EvalConfig:
    """How ``tritonrl eval`` samples and scores a model; see ``tritonrl.metrics`` for the formulas."""

    tasks: str = "bundled"          # "bundled", a KernelBench dir / task file, or "name,name" (bundled names)
    level: int | None = None        # only tasks of this level
    max_tasks: int | None = None    # the first N tasks (sorted by name), for quick runs
    k: int = 1                      # samples per task; pass@1 and pass@k are reported
    temperature: float = 0.0        # 0: greedy (k must be 1 to be meaningful); > 0: sampling
    top_p: float = 0.95
    max_new_tokens: int = 2048
    backend: str = "hf"             # "hf" (transformers generate) or "vllm" (when installed); "auto": vllm if both
    batch_size: int = 4             # prompts per generate call (hf backend)
    device: str = "auto"            # generation device: "auto", "cpu", "cuda"
    seed: int = 0
    prompt_template: str | None = None


@dataclass
class PipelineStagesConfig:
    """Which stages ``tritonrl pipeline`` runs, and which models it evaluates."""

    stages: list[str] = field(default_factory=lambda: ["data", "sft", "rl", "eval", "report"])
    eval_models: list[str] = field(default_factory=lambda: ["base", "sft", "rl"])


@dataclass
class PipelineConfig(TrainingConfig):
    """A whole run: the training sections plus ``eval`` and ``pipeline`` (``configs/smoke.yaml``)."""

    eval: EvalConfig = field(default_factory=EvalConfig)
    pipeline: PipelineStagesConfig = field(default_factory=PipelineStagesConfig)
