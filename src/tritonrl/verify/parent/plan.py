"""The trial plan: which trials judge a candidate, and at what sizes.

    from tritonrl.verify.parent.plan import build_trials
    trials = build_trials(task, config, device="cpu")   # a list of TrialSpec (a TrialPlan)
    trials.reduced      # {"batch_size": (1024, 64), ...}: shapes scaled to the CPU budget; {} when as written
    trials.flags        # ["reduced_shapes"] when reduced: informational, the verdict is still a verdict
    trials.oversize     # True: over the CPU budget and no reduction fits
    trials.declined     # then why the full trials are not run: the verdict will be declined (below); else None

Trials: the tiny variant (when staged), then full trials (base seed, other seeds, values scaled and spread over
magnitudes, alternative shapes: the first at edge sizes ``2^j + 1``, once with small and once with spread values,
the second at ``2^j`` (else nearby sizes) with values shifted far from zero; on the CPU the scaled values on the
wide shape, 3 rows of features at the real scale (else 4x + 1), or a GEMM's deep shape, K at 1040),
then an extra-dtype trial if asked for. On a GPU, full trials (and so the timing, which runs on the
first) use a bundled task's timing shape (``tritonrl.tasks.variants.timing_variant``: KernelBench scale, from
``tasks/bundled/timing_shapes.json``; the bundled sizes are made for the CPU interpreter and a GPU would time
kernel launches at them) and any other task as written; the tiny trial keeps the task's own tiny variant.
Triton's CPU interpreter runs every program instance in Python: KernelBench's sizes (a 1024x8192x8192 GEMM)
cannot finish there, so on the CPU a task over the budget (``VerifyConfig.cpu_max_numel`` elements in its
largest tensor, ``cpu_max_flops`` matmul/conv FLOPs per forward) is judged on its "reduced" variant
(``tritonrl.tasks.variants.reduced_variant``: every size divided by one factor, ratios kept) and on
alternative shapes around that; timing shapes are never used there. The same candidate code runs; only the
sizes the task chooses change.

**Declined.** A task over the CPU budget that no reduction fits (sizes fixed in its code: VGG's 224x224 images,
4096-wide layers) cannot be judged on the CPU within a candidate's time: its full trials are not planned, nor its
tiny trial when that is over the budget too, and the verdict of a candidate that passes what was planned is
*declined* (``correct`` None, ``declined`` the reason, ``mark_declined``): neither correct nor wrong. The decision
reads the task alone (its cost on the meta device against the budget), before any candidate code runs, so no
candidate can cause it or escape a verdict with it; what was judged (static checks, the import, the tiny trial)
still fails a candidate that fails it (docs/verifier.md, "Declined verdicts").
"""

from __future__ import annotations

from tritonrl.config import VerifyConfig
from tritonrl.errors import TaskError
from tritonrl.tasks.model import KernelTask
from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.trial import TrialSpec
from tritonrl.verify.shared.verdict import Stage, VerifyResult

_FIT_CACHE: dict[tuple, tuple[KernelTask, bool]] = {}
_WIDE_CACHE: dict[tuple, KernelTask | None] = {}


class TrialPlan(list):
    """The trials in order (a ``list[TrialSpec]``), with how their sizes were chosen."""

    def __init__(self, trials: list[TrialSpec], reduced: dict | None = None, oversize: bool = False,
                 declined: str | None = None, probe: TrialSpec | None = None) -> None:
        super().__init__(trials)
        self.reduced = dict(reduced or {})
        self.oversize = oversize
        self.declined = declined
        self.probe = probe  # on the CPU: the shape a GPU judges, its launches checked on the meta device

    @property
    def flags(self) -> list[str]:
        return [Flag.REDUCED_SHAPES.value] if self.reduced else []


def build_trials(task: KernelTask, config: VerifyConfig, device: str | None = None) -> TrialPlan:
    """The tiny trial (when staged) and the full trials: seed, other seeds, scaled values, other shapes.

    ``device`` is where the candidate runs ("cpu" or "cuda"; None: ``config.device``, "auto" meaning "cuda"
    when one is available); on the CPU, full trials are sized to the budget (see the module docstring)."""
    from tritonrl.tasks.variants import alt_variants, timing_variant, tiny_variant

    if _on_cpu(config, device):
        base, oversize = fit_cpu_budget(task, config)
    else:  # a bundled task at its timing shape (KernelBench scale): at its own sizes, a GPU times launches
        base, oversize = timing_variant(task) or task, False
    seed, trials = config.seed, []
    tiny_over = oversize and config.staged and _tiny_over_budget(task, config)
    if config.staged and not tiny_over:
        try:
            tiny = tiny_variant(task, same_divisibility=not _on_cpu(config, device))
            trials.append(TrialSpec("tiny", "tiny", tiny.key, tiny.source, seed))
        except TaskError:
            pass  # no smaller version of this task runs: the full trials still judge it
    if oversize:
        return _declined_plan(task, trials, config, tiny_over)
    plan = [(base, seed, 1.0, 1.0, 0.0)]
    if config.multi_input:
        alts = alt_variants(base, n=2, seed=seed) if config.alt_shapes else []
        # Scaled values come twice, plain and then spread: a spread of 100 drives a softmax row to one value and
        # zeros, where a kernel that rounds or drops its small probabilities matches, so the plain scale is the
        # one trial where every such cheat's condition (a moderate row max) holds on every draw of the inputs.
        # On the CPU, on the wide shape where there is one (3 rows, features at the task's real scale, else 4x + 1;
        # a GEMM's K at 1040): a kernel sized to the CPU's widths (a row block fixed at 512 or 4096, all of
        # K in one tile) shows there.
        wide = wide_shape(task, base, config) if config.alt_shapes and _on_cpu(config, device) else None
        # A third of its rows far below zero: a max padded with 0, a softmax whose max is clamped at 0 (0/0 there),
        # a kernel that skips writing all-negative blocks (the fifteenth red team's); below, not both ways: a sum
        # across rows shifted up and rows shifted down cancels (docs/verifier.md, "Trials").
        # Strict mode only: in permissive mode torch's layers feed kernels, and a shift through a convolution makes
        # most of a ReLU kernel's input one sign, where the ReLU writes torch's values back (a copy, by chance).
        shift = config.input_shift if config.strict else 0.0
        extra = [(wide or base, seed + 1, config.scaled_input_factor, 1.0, -shift if shift else 0.0)]
        # The alternative shapes move the values' regime too, each where randn never goes (the fourteenth red
        # team's kernels conditioned on it): the edge shape small (every block of values under ~0.05: gelu as x/2),
        # the second (2^j: every block full) shifted far from zero (one sign; a one-pass variance cancels).
        # A task with fewer alternative shapes takes the rest of them on its own shape.
        regimes = [(config.small_input_factor, 1.0, 0.0), (1.0, 1.0, shift)]
        for k, regime in enumerate(regimes):
            extra.insert(2 * k, (alts[k] if k < len(alts) else base, seed + 3 + k, *regime))
        # the edge shape (else the base) with large mixed values: a dropped last block that a ReLU hid on randn
        extra.append((alts[0] if alts else base, seed + 5, config.scaled_input_factor, config.input_spread, 0.0))
        plan += extra
        while len(plan) < config.num_trials:
            plan.append((base, seed + 10 + len(plan), 1.0, 1.0, 0.0))
        # Strict mode keeps every trial above, whatever ``num_trials`` says: each is a defence (the wide shape, the
        # shifted and spread values), and a reward judged on the first two alone passed two thirds of the
        # thirty-second red team's attacks (``r32_*``); ``num_trials`` beyond them adds seeds.
        plan = plan[: max(1, config.num_trials, strict_trials(config))]
    if config.staged and not _on_cpu(config, device):
        trials += _tiny_alternatives(trials, plan)
    for k, (variant, trial_seed, scale, spread, shift) in enumerate(plan):
        trials.append(TrialSpec(f"full{k}", "full", variant.key, variant.source, trial_seed, scale, spread=spread,
                                shift=shift))
    if config.extra_dtype:
        trials.append(TrialSpec(f"full_{config.extra_dtype}", "full", base.key, base.source, seed + 100, 1.0,
                                config.extra_dtype))
    reduced = base.meta.get("changes") if base.variant == "reduced" and base is not task else None
    probe = gpu_shape_probe(task, base, seed) if _on_cpu(config, device) and config.gpu_shape_probe else None
    return TrialPlan(trials, reduced, oversize, probe=probe)


def gpu_shape_probe(task: KernelTask, base: KernelTask, seed: int) -> TrialSpec | None:
    """On the CPU, the shape a GPU would judge the task at (a bundled task's timing shape, any other task as
    written) when the CPU's trials do not run it: the candidate's forward runs there once on the meta device, its
    launches checked against a GPU's limits and not run (``tritonrl.verify.child.probe``). None when the CPU's own
    shape is that shape, or the task has no timing shape that runs."""
    from tritonrl.tasks.variants import timing_variant

    try:
        gpu = timing_variant(task) or task
    except TaskError:
        return None
    return None if gpu.key == base.key else TrialSpec("gpu_shape", "probe", gpu.key, gpu.source, seed)


def strict_trials(config: VerifyConfig) -> int:
    """The full trials strict mode always runs with several inputs: the base, and the four that move the values and
    the shapes (``build_trials``); 0 where fewer are asked for by turning them off (``multi_input: false``,
    permissive mode)."""
    return 1 + STRICT_REGIMES if config.strict and config.multi_input else 0


STRICT_REGIMES = 4  # small values on the edge shape, scaled on the wide one, shifted on 2^j, spread on the edge


def _tiny_over_budget(task: KernelTask, config: VerifyConfig) -> bool:
    """Whether even the task at its smallest (every size 1, two layers) is over the CPU budget: then so is any tiny
    variant, and the search for one (real forward passes: 19 s for ResNet-18 on a loaded 2-core machine) is spared."""
    from tritonrl.tasks.variants import smallest_source

    smallest = smallest_source(task)
    return smallest is not None and within_budget(smallest, config) is False


def _declined_plan(task: KernelTask, trials: list[TrialSpec], config: VerifyConfig, tiny_over: bool) -> TrialPlan:
    """The plan of a task the CPU cannot judge: its tiny trial alone, or nothing when that is over the budget
    too (the candidate is then imported, and declined), with the reason (``TrialPlan.declined``)."""
    from tritonrl.tasks.variants import largest_input, task_cost

    tiny = [t for t in trials if t.stage == "tiny" and within_budget(t.source, config) is not False]
    if tiny:
        judged = "only its tiny trial was run"
    elif tiny_over or trials:
        judged = "its tiny variant is over the budget too: only the import was judged"
    else:
        judged = "no tiny variant of it runs: only the import was judged"
    cost = task_cost(task.source)
    need = f"{_si(cost.flops)} FLOPs and a {_si(cost.max_numel)}-element tensor" if cost else \
        f"an input of {_si(largest_input(task.source))} elements (its FLOPs cannot be counted on the meta device)"
    reason = (f"not judged on this CPU: one forward of {task.name} at its sizes needs {need}, over the CPU budget "
              f"({_si(config.cpu_max_flops)} FLOPs, {_si(config.cpu_max_numel)} elements: "
              "verify.cpu_max_flops, verify.cpu_max_numel), and no reduction of its sizes fits (the rest are fixed "
              f"in its code); {judged}. Judge it on a GPU, or with --full-size")
    return TrialPlan(tiny, oversize=True, declined=reason)


def mark_declined(result: VerifyResult, trials: TrialPlan) -> VerifyResult:
    """A candidate that passed everything a declined plan ran (``trials.declined``) is declined: ``correct`` None,
    ``declined`` the reason, flag ``declined``, ``stage`` the first stage not judged (full after a tiny trial, else
    compile: ModelNew was imported, never built). A failure of what was run stays that failure."""
    if not trials.declined or result.stage is not Stage.DONE:
        return result
    result.correct = None
    result.declined = trials.declined
    result.stage = Stage.FULL if trials else Stage.COMPILE
    result.flags = [f for f in result.flags if f != Flag.TIMING_UNAVAILABLE.value] + [Flag.DECLINED.value]
    return result


def _tiny_alternatives(tiny: list[TrialSpec], plan: list[tuple]) -> list[TrialSpec]:
    """On a GPU, a tiny trial for each alternative shape of the full trials, its sizes divisible by 16 where the
    alternative's are (``tiny_variant(same_divisibility=True)``): Triton compiles one kernel per divisibility class
    of its integer arguments, and an alternative shape is usually another class. Compiled here, in the tiny stage
    (seconds of CPU, no lease on the GPU), the full trial then reuses the kernel; compiled in the full trial it held
    the GPU's shared lease all that time, and every timing run of that GPU waited for it (docs/verifier.md)."""
    from tritonrl.tasks.variants import tiny_variant

    seen = {t.task_key for t in tiny}
    extra = []
    for variant, trial_seed, *_ in plan:
        if not variant.variant.startswith("alt"):
            continue
        try:
            small = tiny_variant(variant, same_divisibility=True)
        except TaskError:
            continue  # its full trial compiles, as before
        if small.key not in seen:
            seen.add(small.key)
            extra.append(TrialSpec(f"tiny_{variant.variant}", "tiny", small.key, small.source, trial_seed))
    return extra


def fit_cpu_budget(task: KernelTask, config: VerifyConfig) -> tuple[KernelTask, bool]:
    """(the task to run full trials on, oversize): ``task`` itself when it fits the budget, the budget is off or
    its cost is unknown; else its reduced variant; else ``task`` with oversize True. Cached per task and budget."""
    from tritonrl.tasks.variants import reduced_variant

    key = (task.key, config.cpu_max_numel, config.cpu_max_flops)
    if key not in _FIT_CACHE:
        if not (config.cpu_max_numel or config.cpu_max_flops) or within_budget(task.source, config) is not False:
            _FIT_CACHE[key] = (task, False)
        else:
            reduced = reduced_variant(task, lambda source: within_budget(source, config) is True)
            _FIT_CACHE[key] = (reduced, False) if reduced is not None else (task, True)
    return _FIT_CACHE[key]


def wide_shape(task: KernelTask, base: KernelTask, config: VerifyConfig) -> KernelTask | None:
    """``base``'s wide variant (``tritonrl.tasks.variants.wide_variant``, never wider than ``task`` at its real
    scale) when it fits the CPU budget, else None. Cached per task and budget, as ``fit_cpu_budget``."""
    from tritonrl.tasks.variants import timing_variant, wide_variant

    key = (base.key, config.cpu_max_numel, config.cpu_max_flops)
    if key not in _WIDE_CACHE:
        wide = wide_variant(base, timing_variant(task) or task)
        _WIDE_CACHE[key] = wide if wide is not None and within_budget(wide.source, config) is not False else None
    return _WIDE_CACHE[key]


def within_budget(source: str, config: VerifyConfig) -> bool | None:
    """Whether one forward of this task source fits the CPU budget; None when its cost cannot be measured, unless
    an input alone is over it (a Swin transformer's ``.item()`` stops the meta device; its 224x224 images do not)."""
    from tritonrl.tasks.variants import largest_input, task_cost

    cost = task_cost(source)
    if cost is None:
        largest = largest_input(source) if config.cpu_max_numel else None
        return False if largest is not None and largest > config.cpu_max_numel else None
    return ((not config.cpu_max_numel or cost.max_numel <= config.cpu_max_numel)
            and (not config.cpu_max_flops or cost.flops <= config.cpu_max_flops))


def cpu_oversize(task: KernelTask, config: VerifyConfig, device: str | None = None) -> bool:
    """Whether this task's full trials run on the CPU at sizes over the budget (no reduction fits)."""
    return _on_cpu(config, device) and fit_cpu_budget(task, config)[1]


def mark_cpu_size_limit(result: VerifyResult, oversize: bool) -> VerifyResult:
    """A full-stage timeout at sizes over the CPU budget that could not be reduced (``oversize``: a plan's
    ``oversize`` or ``cpu_oversize``) is the machine's limit, not (necessarily) the candidate's fault: add
    ``cpu_size_limit`` and say so in the error."""
    if oversize and result.stage == Stage.FULL and Flag.TIMEOUT.value in result.flags \
            and Flag.CPU_SIZE_LIMIT.value not in result.flags:
        result.flags.append(Flag.CPU_SIZE_LIMIT.value)
        result.error = (f"{result.error}: the task's sizes are over the CPU budget and could not be reduced; "
                        "judge it on a GPU, or raise the timeout")
    return result


def _si(count: int | None) -> str:
    """``66.6G``, ``262K``: a count in three figures."""
    if count is None:
        return "no limit"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            return f"{count / scale:.3g}{unit}"
    return str(count)


def _on_cpu(config: VerifyConfig, device: str | None) -> bool:
    device = device or config.device
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return device == "cpu"
