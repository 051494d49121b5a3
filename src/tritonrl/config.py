"""Every default of tritonrl, as dataclasses: the one place defaults live, and the one place they are checked.

YAML files in ``configs/`` override these; CLI flags override YAML (see ``load_config``).
Each extension of the verifier and of training has an on/off switch here, so an ablation is one flag.

Every field carries its documentation in ``metadata["help"]`` (shown by ``tritonrl config show --comments`` and
by the CLI flags generated from it) and, where it has one, its range (``ge``/``gt``/``le``/``lt``). Choices are
``typing.Literal`` types. The sections are pydantic dataclasses (``config_dataclass``): pydantic checks types
(strictly: an int is not a bool, a string is not a number), choices and ranges, and refuses unknown keys;
cross-field rules live in each section's ``check_rules``. Building a section with bad values, or loading a file,
raises ``ConfigErrors``: every problem at once, each naming its key (``unknown rl.algo 'ppo'; choose one of ...``),
at load, not steps later.

Sections (each owned by the module named; edit a section, not its neighbours):
  VerifyConfig      -> tritonrl.verify
  RewardConfig      -> tritonrl.common.reward
  CurriculumConfig  -> tritonrl.train.curriculum
  training configs  -> tritonrl.train
  EvalConfig        -> tritonrl.evaluation.evaluate
  ServeConfig       -> tritonrl.serve
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import field
from typing import Annotated, Any, ClassVar, Literal

import pydantic

from tritonrl.errors import ConfigError


class ConfigErrors(ConfigError):
    """Every problem found in a config, not just the first; the message holds them all on one line."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        many = f"{len(problems)} config errors: " + " ".join(f"({i}) {p}" for i, p in enumerate(problems, 1))
        super().__init__(problems[0] if len(problems) == 1 else many)


def _float_from_text(value):
    """PyYAML reads YAML 1.1, where ``1e-3`` (no dot) is a string: a number written so is accepted as a float."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    return value


Float = Annotated[float, pydantic.BeforeValidator(_float_from_text)]


def config_dataclass(cls):
    """``cls`` as a pydantic dataclass that checks each value at construction: its type (strict, except that an int
    or a number's text is a float), a Literal's choices, the range in its metadata (``ge``/``gt``/``le``/``lt``;
    pydantic reads these keys of ``dataclasses.field`` metadata), no unknown keys; then ``__post_init__`` (the
    section's ``check_rules``). Bad values raise ``ConfigErrors`` naming each key, not pydantic's own error."""
    cls = pydantic.dataclasses.dataclass(cls, config=pydantic.ConfigDict(strict=True, extra="forbid"))
    validate = cls.__init__

    @functools.wraps(validate)
    def __init__(self, *args, **kwargs):
        try:
            validate(self, *args, **kwargs)
        except pydantic.ValidationError as exc:
            given = dict(zip([f.name for f in dataclasses.fields(cls)], args), **kwargs)
            raise ConfigErrors(_problems(type(self), exc, given)) from None

    cls.__init__ = __init__
    return cls


class Section:
    """What every config section shares: the key prefix errors name (``section``) and cross-field rules
    (``check_rules``, run once pydantic has checked each field)."""

    section: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.check_rules()

    def key(self, name: str) -> str:
        return f"{self.section}.{name}" if self.section else name

    def check_rules(self) -> None:
        """Cross-field rules; report a broken one through ``self.fail``."""

    def fail(self, name: str, message: str):
        raise ValueError(f"{self.key(name)} {message}")  # pydantic collects it with the fields' errors


# ---------------------------------------------------------------- verification (tritonrl.verify)
STRICT_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}  # atol and rtol per dtype, by default
KERNELBENCH_TOLERANCE = 1e-2  # KernelBench's atol and rtol (torch.allclose), whatever the dtype


@config_dataclass
class VerifyConfig(Section):
    """How candidates are judged. Defaults follow KernelBench's protocol, made explicit."""

    section: ClassVar[str] = "verify"

    device: Literal["auto", "cpu", "cuda"] = field(default="auto", metadata={
        "help": "auto: cuda if available; cpu: Triton interpreter; cuda"})
    strict: bool = field(default=True, metadata={
        "help": "no high-level torch compute in ModelNew's forward path"})
    timeout_s: Float = field(default=60.0, metadata={
        "help": "whole-process limit per candidate (compile + all trials)", "gt": 0})
    workers: int = field(default=0, metadata={
        "help": "parallel candidate processes; 0 = one per CPU core (CPU) or per GPU", "ge": 0})
    gpus: list[str] | None = field(default=None, metadata={
        "help": "GPU ids this verifier may use, as CUDA_VISIBLE_DEVICES names them (null: every visible GPU)"})
    workers_per_gpu: int = field(default=1, metadata={
        "help": "GPU: candidates compiling/checking at once per GPU; timing stays exclusive", "ge": 1})
    warm_children: bool = field(default=False, metadata={
        "help": "start a candidate child per place ahead of its candidates (forked, isolated, CUDA started) "
                "whenever the places are free: for GPUs that are the verifier's own (each idle child keeps a CUDA "
                "context on the GPU, memory a training run colocated there would miss)"})
    warm_spares: bool = field(default=False, metadata={
        "help": "with warm_children: also while a batch runs, each child a candidate takes is replaced at once (a "
                "spare a place: up to twice the candidates' CUDA contexts on the GPU), so every candidate finds "
                "one started, not only a batch's first"})
    judge_launchers: bool = field(default=True, metadata={
        "help": "GPU, Triton with a launcher a signature (3.6): the judge compiles each kernel signature's C launcher "
                "once, from the signature a child reports, for every later child of its GPU, instead of each "
                "child's compiler run (about a second of its compile stage); only with the strict sandbox and files "
                "isolated; off: every child builds its own"})
    known_good: bool = field(default=True, metadata={
        "help": "before RL rewards or an evaluation scores anything: judge nine bundled reference kernels (one of "
                "each construct) and stop in one line if any is rejected, a verifier broken on this machine's "
                "torch or Triton (tritonrl.verify.parent.known_good)"})
    share_verdicts: bool = field(default=False, metadata={
        "help": "an evaluation judges each distinct (task, extracted code) once and gives its duplicates the same "
                "verdict (rows say shared_verdict); low-temperature samples repeat often, and the CPU verdict is "
                "an evaluation's main cost. Off: every sample is judged on its own inputs"})
    staged: bool = field(default=True, metadata={"help": "run the tiny-shape stage before the full trials"})
    multi_input: bool = field(default=True, metadata={
        "help": "several trials (seeds, scaled values, alternative shapes), not just one"})
    num_trials: int = field(default=5, metadata={
        "help": "full-shape correctness trials (KernelBench: 5); in strict mode with multi_input never fewer than "
                "its 5 (the base, and values and shapes moved: each a defence), more adds seeds", "ge": 1})
    seed: int = field(default=42, metadata={"help": "base seed; trial seeds are derived from it"})
    alt_shapes: bool = field(default=True, metadata={
        "help": "include alternative-shape trials among the multi-input trials"})
    cpu_cross_check: bool = field(default=True, metadata={
        "help": "on a GPU, judge each candidate the GPU found correct once more on the CPU interpreter (programs in "
                "another order, every access recorded): a data race, a read of memory nothing wrote or an access "
                "outside the launch's tensors found there makes it wrong (a GPU run shows none of them)"})
    cross_check_unfinished: Literal["reject", "stand"] = field(default="reject", metadata={
        "help": "a GPU verdict of correct whose CPU cross-check could not finish (a construct the interpreter cannot "
                "run, a time-out there): reject (flag cross_check_unfinished: a race can hide behind either) or "
                "stand (the GPU's verdict, the CPU's outcome recorded)"})
    hold_hints: bool = field(default=True, metadata={
        "help": "on the CPU, stop a kernel at a tl.multiple_of / tl.max_contiguous hint its values do not bear out "
                "(a GPU's compiler acts on hints: the result there is undefined); off in the CPU cross-check"})
    gpu_shape_probe: bool = field(default=True, metadata={
        "help": "on the CPU, run the forward once more at the shape a GPU judges, on the meta device: a launch a GPU "
                "refuses there (a grid axis over CUDA's limit, a block over Triton's) fails the candidate"})
    extra_dtype: str | None = field(default=None, metadata={
        "help": "e.g. float16: an extra trial in another dtype (needs an atol/rtol entry; off: KernelBench fixes fp32)"})
    tolerance: Literal["strict", "kernelbench"] = field(default="strict", metadata={
        "help": "strict: atol/rtol below (fp32 1e-4); kernelbench: KernelBench's 1e-2 for every dtype "
                "(docs/evaluation.md#tolerances)"})
    atol: dict[str, Float] = field(default_factory=lambda: dict(STRICT_TOLERANCE),
                                   metadata={"help": "absolute tolerance per dtype (tolerance: strict)"})
    rtol: dict[str, Float] = field(default_factory=lambda: dict(STRICT_TOLERANCE),
                                   metadata={"help": "relative tolerance per dtype (tolerance: strict)"})
    randomize_params: bool = field(default=True, metadata={
        "help": "re-randomize parameters identically in both models (defeats default-init)"})
    poison_memory: bool = field(default=True, metadata={
        "help": "fill freshly allocated memory with NaN (defeats stale-buffer outputs)"})
    timing: bool = field(default=True, metadata={
        "help": "time candidate and reference (GPU only; CPU reports None)"})
    warmup: int = field(default=10, metadata={
        "help": "at most this many untimed runs (adaptive: until two agree); docs/timing.md", "ge": 1})
    timed_trials: int = field(default=100, metadata={
        "help": "at most this many timed runs (adaptive: until the median's CI is narrow)", "ge": 1})
    timing_warmup_ms: Float = field(default=25.0, metadata={
        "help": "warm up for at least this much timed GPU work first (clocks settle); docs/timing.md", "ge": 0})
    timing_rel_ci: Float = field(default=0.01, metadata={
        "help": "stop timing once the median's 95% interval is within this share of it", "gt": 0})
    timing_budget_ms: Float = field(default=1000.0, metadata={
        "help": "... or once this much GPU time was spent on timed runs", "ge": 0})
    timing_sets: int = field(default=3, metadata={
        "help": "input sets the timed calls rotate through (refreshed in place; their outputs are checked)",
        "ge": 2})
    suspicious_speedup: Float = field(default=10.0, metadata={
        "help": "above this the result is flagged SUSPICIOUS_SPEEDUP (reward: withhold)", "gt": 1})
    compile_baseline: bool = field(default=False, metadata={
        "help": 'also time torch.compile(Model): timing["ref_compile_ms"], "speedup_vs_compile"'})
    sandbox_memory_gb: Float | None = field(default=16.0, metadata={
        "help": "RLIMIT_AS-style cap for candidate processes (null: no cap)", "gt": 0})
    cpu_max_numel: int | None = field(default=1 << 18, metadata={
        "help": "CPU: full trials' largest tensor at most this many elements (null: sizes as written)", "ge": 1})
    cpu_max_flops: int | None = field(default=1 << 26, metadata={
        "help": "CPU: and matmul/conv FLOPs per forward at most this (tritonrl.verify.parent.plan)", "ge": 1})
    cache_dir: str | None = field(default=None, metadata={
        "help": "reference-output cache (null: a per-user temp dir)"})
    static_checks: bool = field(default=True, metadata={
        "help": "off only to test the runtime defences on their own"})
    network_isolation: bool = field(default=True, metadata={
        "help": "candidate children enter an empty network namespace where permitted"})
    fs_isolation: bool = field(default=True, metadata={
        "help": "candidates in their own PID/mount namespaces, job dirs and caches hidden (docs/verifier.md)"})
    sandbox: Literal["strict", "best_effort"] = field(default="strict", metadata={
        "help": "strict: a candidate whose sandbox lacks a protection (no processes, no native code, no "
                "/proc/self/mem, scrubbed environment, its own file view, unprivileged; network and files where "
                "switched on) is not judged (verifier_error); best_effort: judged, flagged sandbox_incomplete"})
    reference_memory_gb: Float = field(default=4.0, metadata={
        "help": "references each judge holds on its device (least recently used go first; fewer while the device "
                "runs short)", "gt": 0})
    reference_disk_gb: Float = field(default=20.0, metadata={
        "help": "the signed reference cache on disk is pruned to this size (least recently used first)", "ge": 0})
    scaled_input_factor: Float = field(default=3.0, metadata={
        "help": "one multi-input trial multiplies the float inputs by this", "gt": 0})
    input_spread: Float = field(default=100.0, metadata={
        "help": "the same trial then multiplies each float input element by its own factor, log-uniform in "
                "[1/spread, spread]: large magnitudes of mixed scale, where an unstable kernel (exp without the "
                "max subtracted) fails (1: off; kept off where the reference itself is not finite)", "ge": 1})
    small_input_factor: Float = field(default=0.01, metadata={
        "help": "the edge shape's plain trial multiplies the float inputs by this: blocks of small values only, "
                "where a kernel that approximates small inputs (gelu as x/2) fails the L2 check (1: off)", "gt": 0})
    input_shift: Float = field(default=100.0, metadata={
        "help": "the second alternative shape's trial adds this many times each float input's RMS to it: rows far "
                "from zero against their spread and of one sign, where a one-pass variance (E[x^2] - mean^2) "
                "cancels (0: off; kept off where the reference fails or is not finite there)", "ge": 0})
    # where candidates run (tritonrl.verify.parent.backends; docs/scaling.md)
    backend: Literal["local", "ray", "http"] = field(default="local", metadata={
        "help": "local: this machine's processes; ray: actors on a Ray cluster; http: a `tritonrl serve` service "
                "at verify.http_url (docs/serving.md)"})
    ray_address: str | None = field(default=None, metadata={
        "help": 'null: start a local Ray instance; "auto" / "ray://host:10001": join one'})
    ray_num_actors: int | None = field(default=None, metadata={
        "help": "null: one per GPU of the cluster (CPU-only: one per ray_cpus_per_actor)", "ge": 1})
    ray_gpus_per_actor: Float | None = field(default=None, metadata={
        "help": 'null: 1 when the cluster has GPUs and device is not "cpu", else 0', "ge": 0})
    ray_cpus_per_actor: int = field(default=2, metadata={
        "help": "CPU cores reserved per actor (its Verifier runs this many candidates)", "ge": 1})
    ray_max_retries: int = field(default=2, metadata={
        "help": "times a batch whose actor died is retried on another actor", "ge": 0})
    http_url: str | None = field(default=None, metadata={
        "help": 'backend http: the service\'s base URL, e.g. "http://127.0.0.1:8400"'})
    http_token_env: str = field(default="TRITONRL_SERVE_TOKEN", metadata={
        "help": "backend http: the environment variable holding the service's bearer token (unset: none sent)"})
    http_timeout_s: Float = field(default=3600.0, metadata={
        "help": "backend http: the longest a batch may take, queueing and retries after a 429 or 503 included",
        "gt": 0})
    http_batch_items: int = field(default=256, metadata={
        "help": "backend http: items per request (a larger batch is sent as several requests at once)", "ge": 1})

    def tolerances(self) -> tuple[dict[str, float], dict[str, float]]:
        """(atol, rtol) per dtype that the comparison uses: ``atol``/``rtol``, or KernelBench's for every dtype."""
        if self.tolerance == "kernelbench":
            return {d: KERNELBENCH_TOLERANCE for d in self.atol}, {d: KERNELBENCH_TOLERANCE for d in self.rtol}
        return dict(self.atol), dict(self.rtol)

    def check_rules(self) -> None:
        if self.backend == "http" and not self.http_url:
            self.fail("http_url", "is required with verify.backend=http: the `tritonrl serve` service's base URL, "
                      "e.g. http://127.0.0.1:8400")
        if self.tolerance == "kernelbench" and (self.atol != STRICT_TOLERANCE or self.rtol != STRICT_TOLERANCE):
            self.fail("tolerance", "= kernelbench sets atol and rtol to 1e-2 for every dtype; remove verify.atol and "
                      "verify.rtol, or keep tolerance: strict with your own")
        tolerances = sorted(set(self.atol) & set(self.rtol))
        if self.extra_dtype is not None and self.extra_dtype not in tolerances:
            self.fail("extra_dtype", f"= {self.extra_dtype!r} has no tolerance in verify.atol and verify.rtol; "
                      f"choose one of {', '.join(tolerances)} or add tolerances for it")


# ---------------------------------------------------------------- reward (tritonrl.common.reward)
@config_dataclass
class RewardConfig(Section):
    """How a VerifyResult becomes a scalar reward; see ``tritonrl.common.reward`` for the formulas."""

    section: ClassVar[str] = "reward"

    preset: Literal["correctness", "staged"] = field(default="correctness", metadata={
        "help": "correctness (default): 0 unless correct; staged: partial credit per funnel stage (opt-in)"})
    speedup_weight: Float = field(default=0.3, metadata={
        "help": "correctness preset: bonus weight on the speed credit (0: correctness only)", "ge": 0})
    max_speedup: Float = field(default=2.0, metadata={
        "help": "the speedup's 95% lower bound earns credit linearly from 1 (none) to this (full)", "gt": 1})
    withhold_suspicious_speedup: bool = field(default=True, metadata={
        "help": "no speed credit for a result flagged SUSPICIOUS_SPEEDUP"})
    # staged preset: credit for reaching each stage (0 for invalid / static failure)
    compiled_credit: Float = field(default=0.3, metadata={"help": "staged: compiled", "ge": 0, "le": 1})
    tiny_credit: Float = field(default=0.5, metadata={"help": "staged: tiny shape passed", "ge": 0, "le": 1})
    full_credit: Float = field(default=0.7, metadata={
        "help": "staged: full trials passed (speed credit fills the rest up to 1)", "ge": 0, "le": 1})

    def check_rules(self) -> None:
        if not self.compiled_credit <= self.tiny_credit <= self.full_credit:
            self.fail("compiled_credit", f"<= reward.tiny_credit <= reward.full_credit must hold (got "
                      f"{self.compiled_credit}, {self.tiny_credit}, {self.full_credit}): a later stage never "
                      "earns less")


# ---------------------------------------------------------------- curriculum (tritonrl.train.curriculum)
@config_dataclass
class CurriculumConfig(Section):
    """Level-1/Level-2 mixing for RL prompts; the rule is documented in ``tritonrl.train.curriculum``."""

    section: ClassVar[str] = "curriculum"

    enabled: bool = field(default=True, metadata={"help": "off: uniform sampling (the ablation)"})
    start_p: Float = field(default=0.1, metadata={
        "help": "Level-2 share of sampled prompts at the start", "ge": 0, "le": 1})
    end_p: Float = field(default=0.5, metadata={
        "help": "Level-2 share once the ramp is complete", "ge": 0, "le": 1})
    trigger: Float = field(default=0.4, metadata={
        "help": "rolling Level-1 correct rate that starts (and keeps advancing) the ramp", "ge": 0, "le": 1})
    window: int = field(default=64, metadata={
        "help": "how many recent Level-1 results the rolling rate averages", "ge": 1})
    ramp_updates: int = field(default=20, metadata={
        "help": "reward batches over which p moves linearly from start_p to end_p", "ge": 1})
    seed: int = field(default=0, metadata={"help": "the sampler's seed"})

    def check_rules(self) -> None:
        if self.start_p > self.end_p:
            self.fail("start_p", f"= {self.start_p} is above curriculum.end_p = {self.end_p}; the share only grows")


# ---------------------------------------------------------------- training (tritonrl.train)
@config_dataclass
class ModelConfig(Section):
    """Which causal LM to train: a hub id or a local directory."""

    section: ClassVar[str] = "model"

    name_or_path: str = field(default="Qwen/Qwen2.5-Coder-7B-Instruct", metadata={
        "help": "hub id, local dir, PEFT adapter dir, or tiny:DIR (a tiny model built locally)"})
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = field(default="auto", metadata={
        "help": "weights' dtype"})
    trust_remote_code: bool = field(default=False, metadata={"help": "run the model repo's own code"})
    attn_implementation: str | None = field(default=None, metadata={
        "help": "e.g. flash_attention_2 or sdpa; null: the library default"})
    gradient_checkpointing: bool = field(default=False, metadata={
        "help": "recompute activations in backward (less memory, ~20% slower); false means off, whatever TRL's "
                "default"})


@config_dataclass
class LoraConfig(Section):
    """PEFT LoRA adapter; ``enabled: false`` means full fine-tuning."""

    section: ClassVar[str] = "lora"

    enabled: bool = field(default=True, metadata={"help": "false: full fine-tuning"})
    r: int = field(default=16, metadata={"help": "adapter rank", "ge": 1})
    alpha: int = field(default=32, metadata={"help": "LoRA alpha (scale = alpha / r)", "gt": 0})
    dropout: Float = field(default=0.05, metadata={"help": "adapter dropout", "ge": 0, "lt": 1})
    target_modules: str | list[str] = field(default="all-linear", metadata={
        "help": "all-linear: every attention and MLP projection; or a list of module names"})


@config_dataclass
class DataConfig(Section):
    """Where training tasks come from."""

    section: ClassVar[str] = "data"

    source: str = field(default="bundled", metadata={
        "help": "RL tasks: bundled, a KernelBench dir, or a KernelBook .jsonl/.parquet/hub id"})
    sft_sources: list[str] = field(default_factory=lambda: ["bundled"], metadata={
        "help": "SFT pairs (tasks with a solution): bundled, KernelBook .jsonl / hub id"})
    levels: list[int] = field(default_factory=lambda: [1, 2], metadata={"help": "task levels to train on"})
    tasks: list[str] | None = field(default=None, metadata={"help": "only these task names (null: all at levels)"})
    kernelbench_dir: str | None = field(default=None, metadata={
        "help": "KernelBook rows matching this clone's tasks are dropped ($KERNELBENCH_DIR)"})
    max_tasks: int | None = field(default=None, metadata={"help": "at most this many tasks", "ge": 1})
    exclude_tasks: list[str] = field(default_factory=list, metadata={
        "help": "task names never trained on (SFT and RL): the held-out evaluation set (eval.tasks)"})
    prompt_template: str | None = field(default=None, metadata={"help": "prompt template (null: the default)"})

    def check_rules(self) -> None:
        if not self.levels or any(level < 1 for level in self.levels):
            self.fail("levels", f"= {self.levels} must be a non-empty list of levels >= 1, e.g. [1, 2]")


@config_dataclass
class RunConfig(Section):
    """Run directory, checkpoints, resume, mirroring and pre-emption (shared by every stage)."""

    section: ClassVar[str] = "run"

    run_dir: str = field(default="runs/default", metadata={"help": "run directory (manifest, stages, checkpoints)"})
    resume: bool = field(default=False, metadata={
        "help": "continue from the newest complete checkpoint (restored from the mirror if gone)"})
    save_steps: int = field(default=50, metadata={"help": "checkpoint every N optimizer steps", "ge": 1})
    save_total_limit: int | None = field(default=3, metadata={
        "help": "checkpoints kept (null: all)", "ge": 1})
    mirror_url: str | None = field(default=None, metadata={
        "help": "fsspec URL (gs://, s3://, file://, memory://) the run dir is pushed to; null: no mirror"})
    mirror_interval_s: Float = field(default=600.0, metadata={"help": "seconds between mirror pushes", "gt": 0})
    preemption_watch: bool = field(default=False, metadata={
        "help": "poll cloud metadata for a pre-emption notice; save and stop on one"})
    preemption_url: str | None = field(default=None, metadata={
        "help": "null: probe GCP and AWS metadata endpoints"})
    preemption_poll_s: Float = field(default=5.0, metadata={"help": "seconds between polls", "gt": 0})
    report_to: str | list[str] = field(default="none", metadata={
        "help": "passed to transformers: none, wandb, tensorboard, ..."})
    seed: int = field(default=0, metadata={"help": "trainer seed"})
    deterministic: bool = field(default=False, metadata={
        "help": "deterministic kernels and seeding (transformers' full_determinism): the same run on the same "
                "GPU and software makes the same weights, at some speed; a study re-makes a checkpoint this way"})
    logging_steps: int = field(default=1, metadata={"help": "log every N steps", "ge": 1})
    torch_threads: int | None = field(default=None, metadata={
        "help": "CPU threads torch uses for training and generation (null: torch's default, one per core); 1 keeps "
                "a tiny model quick on a shared CPU (README)", "ge": 1})


@config_dataclass
class SftRunConfig(Section):
    """Supervised fine-tuning on (task prompt, Triton solution) pairs via TRL's SFTTrainer."""

    section: ClassVar[str] = "sft"

    learning_rate: Float = field(default=2e-4, metadata={"help": "peak learning rate (LoRA scale)", "gt": 0})
    epochs: Float = field(default=1.0, metadata={"help": "passes over the pairs", "gt": 0})
    max_steps: int = field(default=-1, metadata={"help": "> 0 overrides epochs; -1: use epochs", "ge": -1})
    per_device_batch_size: int = field(default=1, metadata={"help": "pairs per device per step", "ge": 1})
    gradient_accumulation_steps: int = field(default=8, metadata={"help": "micro-batches per step", "ge": 1})
    max_length: int | None = field(default=4096, metadata={"help": "tokens per pair (null: no cut)", "ge": 1})
    warmup_ratio: Float = field(default=0.03, metadata={"help": "share of steps warming up", "ge": 0, "lt": 1})
    lr_scheduler: Literal["linear", "constant"] = field(default="linear", metadata={
        "help": "linear: warm up, then decay to 0 at the last step; constant: the rate throughout (no warm-up), "
                "e.g. to continue an SFT at the rate it had reached"})
    bf16: bool = field(default=False, metadata={"help": "bf16 mixed precision"})
    use_cpu: bool = field(default=False, metadata={"help": "train on the CPU"})

    def check_rules(self) -> None:
        if self.max_steps == 0:
            self.fail("max_steps", "= 0 trains nothing; use -1 (epochs decide) or a positive step count")
        if self.lr_scheduler == "constant" and self.warmup_ratio:
            self.fail("warmup_ratio", f"= {self.warmup_ratio} with sft.lr_scheduler=constant, which has no warm-up; "
                      "set sft.warmup_ratio=0")


@config_dataclass
class BestOfNConfig(Section):
    """Rejection-sampling fine-tuning: sample n, verify, keep the top k above a threshold, SFT, repeat."""

    section: ClassVar[str] = "best_of_n"

    n: int = field(default=10, metadata={"help": "samples per task per round", "ge": 1})
    top_k: int = field(default=3, metadata={"help": "best samples kept per task", "ge": 1})
    min_reward: Float = field(default=1.0, metadata={"help": "keep only samples at or above this (1.0 = correct)"})
    rounds: int = field(default=3, metadata={"help": "sample -> verify -> SFT rounds", "ge": 1})
    reward_weighted: bool = field(default=False, metadata={
        "help": "keep every sample with reward > 0, repeated round(reward * copies_per_reward)"})
    copies_per_reward: Float = field(default=2.0, metadata={"help": "reward_weighted copies", "gt": 0})
    tasks_per_round: int | None = field(default=None, metadata={"help": "null: every task", "ge": 1})
    sft_steps_per_round: int = field(default=-1, metadata={
        "help": "-1: one epoch over the kept samples", "ge": -1})
    batch_size: int = field(default=8, metadata={
        "help": "tasks a generate call samples (n each); a call is judged while the next generates, and saved",
        "ge": 1})

    def check_rules(self) -> None:
        if self.top_k > self.n:
            self.fail("top_k", f"= {self.top_k} is more than best_of_n.n = {self.n} samples")
        if self.sft_steps_per_round == 0:
            self.fail("sft_steps_per_round", "= 0 trains nothing; use -1 (one epoch) or a positive count")


@config_dataclass
class RLRunConfig(Section):
    """On-policy RL with the verifier's reward (GRPO, RLOO) through TRL; Best-of-N settings in ``best_of_n``."""

    section: ClassVar[str] = "rl"

    algo: Literal["grpo", "rloo", "best-of-n"] = field(default="grpo", metadata={"help": "the RL algorithm"})
    num_generations: int = field(default=8, metadata={
        "help": "completions per prompt (the group; >= 2 for grpo and rloo)", "ge": 1})
    max_completion_length: int = field(default=2048, metadata={"help": "tokens per completion", "ge": 1})
    temperature: Float = field(default=1.0, metadata={"help": "sampling temperature", "gt": 0})
    top_p: Float = field(default=1.0, metadata={"help": "nucleus sampling (1.0: off)", "gt": 0, "le": 1})
    # LoRA (the default, lora.enabled) needs ~10x the full-fine-tuning rate: 1e-6 (TRL's default, meant for full
    # fine-tuning) barely moves a rank-16 adapter in a few hundred steps.
    learning_rate: Float = field(default=2e-5, metadata={"help": "peak learning rate (LoRA scale)", "gt": 0})
    steps: int = field(default=200, metadata={"help": "optimizer steps (TRL max_steps)", "ge": 1})
    per_device_batch_size: int = field(default=8, metadata={
        "help": "completions per device per step (a multiple of num_generations' share)", "ge": 1})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "micro-batches per step", "ge": 1})
    beta: Float = field(default=0.0, metadata={"help": "KL coefficient (0: no reference model)", "ge": 0})
    num_iterations: int = field(default=1, metadata={
        "help": "optimisation passes per generation batch (TRL's mu; > 1 reuses samples, clipped)", "ge": 1})
    epsilon_high: Float | None = field(default=None, metadata={
        "help": "upper clip range (DAPO: 0.28); null: symmetric, TRL's epsilon (0.2)", "gt": 0})
    # Rewards differ within a group mostly by correctness (0 vs >= 1); dividing by the *group* std would blow
    # small speed-credit differences among all-correct groups up to unit advantages. The batch std keeps them
    # small (PPO-Lite); "none" (Dr. GRPO) keeps the raw reward scale.
    scale_rewards: Literal["group", "batch", "none"] = field(default="batch", metadata={
        "help": "advantage scaling: group std (TRL default; amplifies timing noise), batch std, or none. "
                "rloo: batch -> normalize_advantages, none -> off"})
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"] = field(
        default="dapo", metadata={"help": "grpo only: TRL's loss aggregation (dapo: token-level, no length bias)"})
    mask_truncated_completions: bool = field(default=False, metadata={
        "help": "drop truncated completions from the loss (off: an unfinished kernel earns 0, a real signal)"})
    bf16: bool = field(default=False, metadata={"help": "bf16 mixed precision"})
    use_cpu: bool = field(default=False, metadata={"help": "train on the CPU"})
    use_vllm: bool = field(default=False, metadata={"help": "generate with vLLM (needs vllm installed, a GPU)"})
    vllm_mode: Literal["colocate", "server"] = field(default="colocate", metadata={
        "help": "colocate: vLLM on the training GPUs; server: a separate trl vllm-serve"})
    vllm_server_base_url: str | None = field(default=None, metadata={
        "help": "server mode: e.g. http://gen-node:8000 (trl vllm-serve)"})
    vllm_gpu_memory_utilization: Float = field(default=0.3, metadata={
        "help": "colocate: share of each GPU's memory vLLM takes (the rest trains)", "gt": 0, "le": 1})
    vllm_max_model_length: int | None = field(default=None, metadata={
        "help": "colocate: vLLM context (prompt + completion) in tokens; null: the model's", "ge": 1})
    vllm_enable_sleep_mode: bool = field(default=False, metadata={
        "help": "colocate: offload vLLM weights/cache during the optimizer step (less memory, slower)"})
    # tritonrl.train.fast_generation: transformers' static cache + compiled decode step (no vLLM)
    generation: Literal["fast", "eager"] = field(default="fast", metadata={
        "help": "transformers generation (no vLLM): fast = static KV cache sized once + torch.compile'd decode "
                "step (CUDA only: elsewhere eager, said once); eager = TRL's default dynamic cache"})
    generation_compile: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "generation=fast: transformers CompileConfig options (fullgraph, dynamic, backend, mode, options); "
                "default mode reduce-overhead (CUDA graphs)"})
    generation_merge_lora: bool = field(default=True, metadata={
        "help": "generation=fast with LoRA: generate with the adapter merged into the base weights (no adapter "
                "matmuls in the decode step: 1.7x the tokens a second on an H200; a second copy of the adapted "
                "base weights in GPU memory, restored exactly after each generate; kept unmerged where that copy "
                "would take over a fifth of the GPU's memory)"})
    # tritonrl.train.reward_overlap: verification of chunk k beside the generation of chunk k+1
    generation_chunks: int = field(default=1, metadata={
        "help": "generate a rank's batch in this many equal chunks, each verified in the background as soon as "
                "it is generated (1: one generate call, verification after it)", "ge": 1})
    generation_switch_interval_ms: Float | None = field(default=0.5, metadata={
        "help": "generation_chunks > 1: Python's thread switch interval while a chunk is generated beside the "
                "verification (the judge's threads share this process's GIL, and the decode loop gives it up at every "
                "token; null: Python's 5 ms)", "gt": 0})
    reward_beside_training: bool = field(default=False, metadata={
        "help": "with generation_chunks = trl.steps_per_generation / gradient_accumulation_steps (each chunk one "
                "optimizer step's batch): score each chunk as its own step's batch, so a step waits only for its "
                "chunk's verdicts and the rest are verified beside the steps before (grpo, one process; "
                "tritonrl.train.step_rewards)"})
    curriculum: bool = field(default=True, metadata={
        "help": "sample prompts by the adaptive curriculum (off: uniform, TRL's sampler)"})
    async_reward: bool = field(default=False, metadata={"help": "verify in a thread via TRL's async rewards"})
    init_from: str | None = field(default=None, metadata={
        "help": "a manifest stage (sft) whose model to start from; null: model.name_or_path"})
    shuffle_rewards: bool = field(default=False, metadata={
        "help": "control run: permute each group's rewards among its completions (no learning signal)"})
    verify_cache: bool = field(default=False, metadata={
        "help": "verify each distinct (task, extracted code) once per run and reuse the verdict"})
    stop_without_signal: int = field(default=0, metadata={
        "help": "after this many steps, stop (and say so) when at least no_signal_share of the reward groups so "
                "far had zero variance, i.e. no gradient (0: never)", "ge": 0})
    no_signal_share: Float = field(default=0.9, metadata={
        "help": "stop_without_signal's threshold: the share of zero-variance groups", "gt": 0, "le": 1})
    trl: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "more GRPOConfig/RLOOConfig options, applied after ours; keys checked against the installed TRL"})
    # multi-turn refinement (Kevin): tritonrl.train.multiturn
    turns: int = field(default=1, metadata={
        "help": "grpo: turns per trajectory, each a training sample (1: single-turn); num_generations and "
                "per_device_batch_size must be multiples, num_generations at least 2 x turns", "ge": 1})
    turn_discount: Float = field(default=0.4, metadata={
        "help": "turns > 1: gamma in a turn's return G_t = r_t + gamma * G_{t+1} (Kevin: 0.4)", "ge": 0, "le": 1})
    turn_return: Literal["sum", "max"] = field(default="sum", metadata={
        "help": "sum: G_t = r_t + gamma * G_{t+1}; max: G_t = max over t' >= t of gamma^(t'-t) * r_t'"})
    turn_max_prompt_tokens: int | None = field(default=8192, metadata={
        "help": "turns > 1: prompt budget; the oldest attempts are summarised to fit (null: no limit)", "ge": 1})

    def check_rules(self) -> None:
        if self.algo in ("grpo", "rloo") and self.num_generations < 2:
            self.fail("num_generations", f"= {self.num_generations}: {self.algo} needs >= 2 (advantages compare "
                      "the samples of one prompt)")
        if self.algo == "rloo" and self.scale_rewards == "group":
            self.fail("scale_rewards", "= 'group' has no RLOO form; choose batch (normalize_advantages) or none")
        if self.use_vllm and self.use_cpu:
            self.fail("use_vllm", "needs a GPU; set rl.use_vllm=false or rl.use_cpu=false")
        if self.vllm_max_model_length is not None and self.vllm_max_model_length <= self.max_completion_length:
            self.fail("vllm_max_model_length", f"= {self.vllm_max_model_length} leaves no room for the prompt "
                      f"next to rl.max_completion_length = {self.max_completion_length}; raise it or use null")
        if self.algo == "grpo" and self.loss_type == "luspo" and \
                self.trl.get("importance_sampling_level") != "sequence":
            self.fail("loss_type", "= 'luspo' needs rl.trl.importance_sampling_level=sequence")
        epsilon = self.trl.get("epsilon", 0.2)
        if self.epsilon_high is not None and isinstance(epsilon, (int, float)) and self.epsilon_high < epsilon:
            self.fail("epsilon_high", f"= {self.epsilon_high} is below the lower clip rl.trl.epsilon ({epsilon}); "
                      "use a value >= it, e.g. 0.28")
        self._check_turns()
        self._check_trl_keys()
        self._check_generation()

    def _check_generation(self) -> None:
        unknown = sorted(set(self.generation_compile) - COMPILE_CONFIG_KEYS)
        if unknown:
            self.fail("generation_compile", f"has key(s) {', '.join(unknown)}; transformers' CompileConfig takes "
                      f"{', '.join(sorted(COMPILE_CONFIG_KEYS))}")
        if self.generation_chunks == 1:
            if self.reward_beside_training:
                self.fail("reward_beside_training", "needs rl.generation_chunks > 1 (a chunk a step's batch)")
            return
        steps = self.trl.get("steps_per_generation") or self.gradient_accumulation_steps  # TRL's default
        batch = self.per_device_batch_size * steps
        if "generation_batch_size" not in self.trl and batch % self.generation_chunks:
            source = ("rl.trl.steps_per_generation" if "steps_per_generation" in self.trl
                      else "rl.gradient_accumulation_steps")
            self.fail("generation_chunks", f"= {self.generation_chunks} must divide a rank's generation batch, "
                      f"rl.per_device_batch_size x {source} = {batch} (equal chunks keep one compiled shape)")
        for name, why in (("use_vllm", "vLLM generates the whole batch at once"),
                          ("verify_cache", "the cache dedups across a whole batch; use one or the other"),
                          ("async_reward", "the overlap already verifies in the background")):
            if getattr(self, name):
                self.fail("generation_chunks", f"> 1 does not apply with rl.{name}=true ({why}); set "
                          "rl.generation_chunks=1")
        if self.turns > 1:
            self.fail("generation_chunks", "> 1 does not apply with rl.turns > 1 (each turn is verified inside "
                      "the rollout); set rl.generation_chunks=1")
        if self.reward_beside_training:
            self._check_reward_beside_training(steps)

    def _check_reward_beside_training(self, steps: int) -> None:
        if self.algo != "grpo":
            self.fail("reward_beside_training", f"is implemented for grpo, not {self.algo}; set it false")
        if "generation_batch_size" in self.trl:
            self.fail("reward_beside_training", "sizes a generation by rl.trl.steps_per_generation; leave "
                      "rl.trl.generation_batch_size unset")
        per_generation = self.generation_chunks * self.gradient_accumulation_steps
        if steps != per_generation:
            self.fail("reward_beside_training", f"needs each of the {self.generation_chunks} chunks to be one optimizer "
                      f"step's batch: rl.trl.steps_per_generation = rl.generation_chunks x "
                      f"rl.gradient_accumulation_steps = {per_generation} (it is {steps})")
        batch = self.per_device_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            self.fail("reward_beside_training", f"needs whole groups in a step's batch: rl.per_device_batch_size x "
                      f"rl.gradient_accumulation_steps = {batch} is not a multiple of rl.num_generations = "
                      f"{self.num_generations}")

    def _check_turns(self) -> None:
        if self.turns == 1:
            return
        if self.algo != "grpo":
            self.fail("turns", f"= {self.turns}: multi-turn refinement is implemented for grpo only")
        for name in ("num_generations", "per_device_batch_size"):
            if getattr(self, name) % self.turns:
                self.fail(name, f"= {getattr(self, name)} must be a multiple of rl.turns = {self.turns} (each "
                          "trajectory fills rl.turns consecutive slots of a group)")
        if self.num_generations < 2 * self.turns:
            self.fail("num_generations", f"= {self.num_generations} holds one trajectory of rl.turns = {self.turns}: "
                      "a turn's advantage compares it with the same turn of the group's other trajectories; use "
                      f">= {2 * self.turns}")
        if self.async_reward:
            self.fail("async_reward", "has no effect with rl.turns > 1 (verification runs inside the rollout); "
                      "set it to false")

    def _check_trl_keys(self) -> None:
        """rl.trl keys must be fields of the installed TRL config class (imported only when rl.trl is set)."""
        if not self.trl or self.algo == "best-of-n":
            return
        if "save_total_limit" in self.trl:
            self.fail("trl", "sets save_total_limit; use run.save_total_limit (tritonrl deletes old checkpoints "
                      "only once the new one is complete, the Trainer's own rotation before)")
        known = trl_config_fields(self.algo)
        if known is None:
            return  # TRL not installed: training cannot run either, and will say so
        unknown = sorted(k for k in self.trl if k not in known)
        if unknown:
            cls = "GRPOConfig" if self.algo == "grpo" else "RLOOConfig"
            self.fail("trl", f"has key(s) {', '.join(unknown)} that the installed TRL's {cls} does not know; "
                      f"check the spelling against trl.{cls}")


COMPILE_CONFIG_KEYS = frozenset({"fullgraph", "dynamic", "backend", "mode", "options"})  # transformers 5.17-5.24


@functools.cache
def trl_config_fields(algo: str) -> frozenset[str] | None:
    """Field names of the installed TRL's GRPOConfig / RLOOConfig, or None without TRL."""
    try:
        import trl
    except ImportError:
        return None
    cls = trl.GRPOConfig if algo == "grpo" else trl.RLOOConfig
    return frozenset(f.name for f in dataclasses.fields(cls))


@config_dataclass
class TrainingConfig(Section):
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

    def check_rules(self) -> None:
        top = 1.0 + self.reward.speedup_weight if self.reward.preset == "correctness" else 1.0
        if self.rl.algo == "best-of-n" and self.best_of_n.min_reward > top:
            self.fail("best_of_n.min_reward", f"= {self.best_of_n.min_reward} is above the highest reward of "
                      f"reward.preset={self.reward.preset} ({top}); nothing would be kept")


# ---------------------------------------------------------------- the verifier as a service (tritonrl.serve)
@config_dataclass
class ServeConfig(Section):
    """``tritonrl serve``: where it listens, who may call it, and how much it takes at once (docs/serving.md)."""

    section: ClassVar[str] = "serve"

    host: str = field(default="127.0.0.1", metadata={
        "help": "address to bind; anything but loopback needs a bearer token (serve.token_file or serve.token_env)"})
    port: int = field(default=8400, metadata={"help": "TCP port (0: any free port, printed at start)",
                                              "ge": 0, "le": 65535})
    token_file: str | None = field(default=None, metadata={
        "help": "file holding the bearer token clients must send (Authorization: Bearer ...); read once at start"})
    token_env: str = field(default="TRITONRL_SERVE_TOKEN", metadata={
        "help": "environment variable holding the bearer token, when serve.token_file is not given"})
    task_sources: bool = field(default=True, metadata={
        "help": "accept tasks as KernelBench source (trusted code: it runs in the judge, outside the sandbox); "
                "off: bundled task names only"})
    max_body_bytes: int = field(default=32 << 20, metadata={"help": "largest request body (413 above)", "ge": 1024})
    max_request_items: int = field(default=1024, metadata={"help": "most items in one request (413 above)", "ge": 1})
    max_text_chars: int = field(default=256 << 10, metadata={
        "help": "longest completion, code or task source of one item (413 above)", "ge": 1})
    max_queue_items: int = field(default=4096, metadata={
        "help": "items waiting to be judged, all requests together; a request that would pass it gets 429 with "
                "Retry-After", "ge": 1})
    max_batch_items: int = field(default=64, metadata={
        "help": "most items, of any requests, handed to the verifier in one batch", "ge": 1})
    batches_in_flight: int = field(default=4, metadata={
        "help": "batches judged at once: the verifier's places stay busy while a batch's last items finish, and a "
                "batch of slow kernels does not hold back cheap rejections queued behind it", "ge": 1})
    batch_wait_ms: Float = field(default=20.0, metadata={
        "help": "how long a batch waits for items of other requests once its first item is queued", "ge": 0})
    deadline_s: Float = field(default=1800.0, metadata={
        "help": "a request not answered within this (or its own deadline_s, if shorter) gets 504; its items not "
                "yet started are dropped", "gt": 0})
    drain_s: Float = field(default=600.0, metadata={
        "help": "on SIGTERM: how long requests in flight may take to finish before the service stops anyway",
        "ge": 0})


@config_dataclass
class ServeRunConfig(Section):
    """Everything ``tritonrl serve`` needs: the verifier, the reward of ``/v1/rewards`` and the service."""

    verify: VerifyConfig = field(default_factory=VerifyConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)

    def check_rules(self) -> None:
        if self.verify.backend == "http":
            self.fail("verify.backend", "= http would make the service call a service; choose local or ray")


# ---------------------------------------------------------------- evaluation and pipeline (tritonrl.evaluation.evaluate, .pipeline)
@config_dataclass
class EvalConfig(Section):
    """How ``tritonrl eval`` samples and scores a model; see ``tritonrl.evaluation.metrics`` for the formulas."""

    section: ClassVar[str] = "eval"

    tasks: str = field(default="bundled", metadata={
        "help": "bundled, a KernelBench dir / task file, or name,name (bundled names)"})
    level: int | None = field(default=None, metadata={"help": "only tasks of this level", "ge": 1})
    max_tasks: int | None = field(default=None, metadata={
        "help": "the first N tasks (sorted by name), for quick runs", "ge": 1})
    k: int = field(default=1, metadata={"help": "samples per task; pass@1 and pass@k are reported", "ge": 1})
    temperature: Float = field(default=0.0, metadata={
        "help": "0: greedy (k must be 1 to be meaningful); > 0: sampling", "ge": 0})
    top_p: Float = field(default=0.95, metadata={"help": "nucleus sampling", "gt": 0, "le": 1})
    max_new_tokens: int = field(default=2048, metadata={"help": "tokens per completion", "ge": 1})
    backend: Literal["hf", "vllm", "auto"] = field(default="hf", metadata={
        "help": "hf: transformers generate; vllm (when installed); auto: vllm if installed"})
    batch_size: int = field(default=4, metadata={"help": "prompts per generate call (hf backend)", "ge": 1})
    device: Literal["auto", "cpu", "cuda"] = field(default="auto", metadata={"help": "generation device"})
    seed: int = field(default=0, metadata={"help": "sampling seed"})
    prompt_template: str | None = field(default=None, metadata={"help": "prompt template (null: the default)"})
    turns: int = field(default=1, metadata={
        "help": "refinement turns per sample: after a failed attempt the next prompt carries its code and the "
                "verifier's feedback (1: single-turn)", "ge": 1})
    refine_for_speed: bool = field(default=False, metadata={
        "help": "turns > 1: keep refining a correct kernel for speed (false: a sample stops at its first correct "
                "attempt)"})
    max_prompt_tokens: int | None = field(default=8192, metadata={
        "help": "turns > 1: prompt budget; the oldest attempts are summarised to fit (null: no limit)", "ge": 1})


@config_dataclass
class PipelineStagesConfig(Section):
    """Which stages ``tritonrl pipeline`` runs, and which models it evaluates."""

    section: ClassVar[str] = "pipeline"

    stages: list[Literal["data", "sft", "rl", "eval", "report"]] = field(
        default_factory=lambda: ["data", "sft", "rl", "eval", "report"], metadata={"help": "stages to run"})
    eval_models: list[Literal["base", "sft", "rl"]] = field(
        default_factory=lambda: ["base", "sft", "rl"], metadata={"help": "models the eval stage scores"})
    in_distribution: bool = field(default=False, metadata={
        "help": "allow eval tasks that are also training tasks; the report is then labelled IN-DISTRIBUTION "
                "(false: such an overlap is an error before any training)"})


@config_dataclass
class PipelineConfig(TrainingConfig):
    """A whole run: the training sections plus ``eval`` and ``pipeline`` (``configs/smoke.yaml``)."""

    eval: EvalConfig = field(default_factory=EvalConfig)
    pipeline: PipelineStagesConfig = field(default_factory=PipelineStagesConfig)


# ---------------------------------------------------------------- loading (YAML + key=value overrides)
REMOVED_KEYS = {
    "rl.max_prompt_length": "TRL's GRPOConfig no longer has it (prompts are not truncated); with an older TRL "
                            "that does, set rl.trl.max_prompt_length",
}


def load_config(path: str | None, overrides: list[str] | None = None, schema: type = TrainingConfig):
    """Build ``schema`` from its defaults, then the YAML file at ``path``, then ``key.sub=value`` overrides.

    Values in overrides are parsed as YAML scalars/lists (``rl.steps=3``, ``lora.enabled=false``,
    ``data.levels=[1]``). Unknown keys, wrongly typed values, values outside their choices or range, and
    inconsistent combinations raise ``ConfigErrors``: every problem, on one line, each naming its key.
    """
    data: dict = {}
    if path:
        data = _read_yaml(path)
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"override {item!r} is not of the form key.sub=value")
        _set_dotted(data, key.strip().split("."), _parse_scalar(raw))
    return _build(schema, data)


def config_field(schema: type, dotted: str) -> tuple[dataclasses.Field, Any]:
    """The dataclass field and its type for a dotted key (``rl.algo``) of ``schema``."""
    *sections, name = dotted.split(".")
    for section in sections:
        schema = _type_hints(schema)[section]
    fields = {f.name: f for f in dataclasses.fields(schema)}
    return fields[name], _type_hints(schema)[name]


def _read_yaml(path: str) -> dict:
    from tritonrl.util.yamlfile import load_yaml

    data = load_yaml(path) or {}
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


def _build(schema: type, data: Any):
    """``schema`` (sections of settings) from a mapping: each section built from its own mapping, then the whole,
    whose rules span sections. ``ConfigErrors`` lists every problem, in the order of ``data``'s keys."""
    if not isinstance(data, dict):
        raise ConfigErrors(["config section <root> must be a mapping"])
    fields = {f.name: f for f in dataclasses.fields(schema)}
    sections, problems = {}, []
    for key, value in data.items():
        if key not in fields:
            problems.append(_unknown_key("", key, fields))
        elif not isinstance(value or {}, dict):
            problems.append(f"config section {key} must be a mapping")
        else:
            try:
                sections[key] = _type_hints(schema)[key](**(value or {}))
            except ConfigErrors as exc:
                problems += exc.problems
    if problems:
        raise ConfigErrors(problems)
    return schema(**sections)


def _unknown_key(prefix: str, key: str, fields: dict) -> str:
    hint = REMOVED_KEYS.get(f"{prefix}{key}")
    known = f"removed: {hint}" if hint else f"known: {', '.join(sorted(fields))}"
    return f"unknown config key {prefix}{key} ({known})"


def validate_file(path: str, schema: type = TrainingConfig) -> list[str]:
    """Every problem in the config file at ``path``, one line each (empty when it is valid): each duplicate
    key (``path:line: ...``), then ``config_errors`` of what PyYAML would load."""
    from tritonrl.util.yamlfile import read_yaml

    try:
        with open(path, encoding="utf-8") as fh:
            data, duplicates = read_yaml(fh.read(), path)
    except FileNotFoundError:
        return [f"config file not found: {path}"]
    except (OSError, UnicodeDecodeError, ConfigError) as exc:
        return [str(exc)]
    if not isinstance(data or {}, dict):
        return duplicates + [f"{path}: config file must hold a mapping at the top level"]
    return duplicates + [f"{path}: {e}" for e in config_errors(schema, data or {})]


def config_errors(schema: type, data: Any) -> list[str]:
    """Every problem in ``data`` for ``schema``, not just the first: each unknown key and each bad value, then, for
    a section that has none of those, its cross-field rules (``check_rules``), and last the rules between
    sections."""
    try:
        _build(schema, data)
    except ConfigErrors as exc:
        return exc.problems
    return []


_BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
_RANGE_ERRORS = {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}


def _problems(schema: type, exc: pydantic.ValidationError, given: dict) -> list[str]:
    """pydantic's errors for building ``schema`` from ``given``, one line per key in our words and in the order of
    ``given`` (a field's first error only: a list with two bad items is one problem); a broken rule's message."""
    prefix = f"{schema.section}." if schema.section else ""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    problems: dict[str, str] = {}
    for error in exc.errors():
        if not error["loc"]:  # __post_init__ (check_rules) raised: its message names the keys
            problems[""] = str(error["ctx"]["error"])
            continue
        name = error["loc"][0]
        if isinstance(name, int) and name < len(fields):  # a positional argument
            name = list(fields)[name]
        if name in problems:
            continue
        if name not in fields:
            problems[name] = _unknown_key(prefix, name, fields)
        else:
            hint, value = _type_hints(schema)[name], given.get(name, error["input"])
            problems[name] = _bad_value(prefix + name, value, hint, fields[name].metadata, error["type"])
    order = {name: i for i, name in enumerate(given)}
    return [problems[name] for name in sorted(problems, key=lambda name: order.get(name, len(order)))]


def _bad_value(key: str, value, hint, metadata, error_type: str) -> str:
    if dataclasses.is_dataclass(hint):
        return f"config section {key} must be a mapping"
    choices = _choices(hint)
    if choices:
        allowed = ", ".join("null" if c is None else str(c) for c in choices)
        return f"unknown {key} {value!r}; choose one of {allowed}"
    if error_type in _RANGE_ERRORS:
        bounds = " and ".join(f"{sign} {metadata[rule]}" for rule, sign in _BOUNDS.items() if rule in metadata)
        return f"{key} = {value!r} is out of range; it must be {bounds}"
    return f"config key {key} = {value!r} does not match type {_type_name(hint)}"


@functools.cache
def _type_hints(schema: type) -> dict[str, Any]:
    import typing

    return typing.get_type_hints(schema)


def _options(hint) -> tuple:
    import types
    import typing

    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


def _choices(hint) -> tuple:
    """Every Literal value a hint allows (``None`` too when optional); empty for non-Literal hints."""
    import typing

    values: list = []
    for option in _options(hint):
        if typing.get_origin(option) is list:
            option = (typing.get_args(option) or (Any,))[0]
        if typing.get_origin(option) is Literal:
            values += typing.get_args(option)
        elif option is type(None):
            values.append(None)
    return tuple(values) if any(v is not None for v in values) else ()


def _type_name(hint) -> str:
    import typing

    plain = isinstance(hint, type) and not typing.get_args(hint)
    return hint.__name__ if plain else str(hint).replace("typing.", "")
