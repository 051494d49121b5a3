"""The trial plan: the same trials as ever on a GPU or for small tasks; on the CPU, big tasks at reduced shapes."""

import dataclasses
from pathlib import Path

import torch

from tests.verify.tasks import RELU, TASKS
from tritonrl.config import VerifyConfig
from tritonrl.tasks import get_task, load_tasks
from tritonrl.tasks.model import KernelTask
from tritonrl.tasks.variants import task_cost
from tritonrl.verify import Flag, Stage, VerifyResult
from tritonrl.verify.judge.compare import compare_outputs
from tritonrl.verify.parent.plan import build_trials, cpu_oversize, mark_cpu_size_limit
from tritonrl.verify.shared.trial import load_task_module, make_inputs

KB_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench"
GEMM = next(t for t in load_tasks(KB_FIXTURE, level=2) if t.name == "3_Gemm_LayerNorm_GELU_Scale")
BIG_RELU = KernelTask("big_relu", 1, RELU.replace("batch_size = 16", "batch_size = 4096")
                      .replace("dim = 1024", "dim = 512"))
GOOD = (Path(__file__).parent / "fixtures" / "runtime" / "good_relu.py").read_text()


def test_small_task_is_planned_as_written():
    trials = build_trials(TASKS["relu"], VerifyConfig(), device="cpu")
    assert not trials.reduced and trials.flags == [] and not trials.oversize
    assert [t.name for t in trials] == ["tiny", "full0", "full1", "full2", "full3", "full4"]
    assert trials[1].source == TASKS["relu"].source  # the base seed's full trial is the task as written


def test_strict_mode_never_drops_the_trials_that_move_values_and_shapes():
    """The training configs' ``num_trials: 2`` judged tiny, full0 and full1 only: the wide shape, the shifted rows and
    the spread values (full2-full4) never ran where the reward is paid (the thirty-second red team)."""
    def names(**kw):
        return [t.name for t in build_trials(TASKS["relu"], VerifyConfig(**kw), device="cpu")]

    five = ["tiny", "full0", "full1", "full2", "full3", "full4"]
    assert names(num_trials=1) == names(num_trials=2) == names() == five
    assert names(num_trials=7) == [*five, "full5", "full6"]  # more adds seeds
    assert names(num_trials=2, multi_input=False) == ["tiny", "full0"]  # one trial, asked for by name
    assert names(num_trials=2, strict=False) == ["tiny", "full0", "full1"]  # permissive mode as before
    shifted = build_trials(TASKS["relu"], VerifyConfig(num_trials=2), device="cpu")
    assert any(t.shift for t in shifted) and any(t.spread != 1.0 for t in shifted)


def test_big_task_is_reduced_to_the_cpu_budget_and_says_so():
    config = VerifyConfig()
    trials = build_trials(GEMM, config, device="cpu")
    assert trials.flags == [Flag.REDUCED_SHAPES.value] and not trials.oversize
    # the mildest shrink that fits: every size divided by 4, ratios kept
    assert trials.reduced == {"batch_size": (256, 64), "in_features": (2048, 512), "out_features": (1024, 256)}
    for trial in trials:
        cost = task_cost(trial.source)
        # alternative shapes are +-25% around the reduced ones: within twice the budget
        assert cost.max_numel <= 2 * config.cpu_max_numel and cost.flops <= 2 * config.cpu_max_flops, trial.name
    assert task_cost(trials[1].source).flops <= config.cpu_max_flops
    assert "scale = 0.5" in trials[1].source  # only sizes change


def test_gpu_and_full_size_keep_the_task_as_written():
    for trials in (build_trials(GEMM, VerifyConfig(), device="cuda"),
                   build_trials(GEMM, VerifyConfig(cpu_max_numel=None, cpu_max_flops=None), device="cpu")):
        assert not trials.reduced and trials.flags == []
        assert next(t for t in trials if t.name == "full0").source == GEMM.source


def test_timeout_over_a_budget_that_cannot_be_met_is_cpu_size_limit():
    config = VerifyConfig(cpu_max_flops=1)  # not even 1x1x1 fits: the task runs as written, over the budget
    assert cpu_oversize(GEMM, config, "cpu") and not cpu_oversize(GEMM, config, "cuda")
    assert not cpu_oversize(GEMM, VerifyConfig(), "cpu")
    timeout = VerifyResult(Stage.FULL, flags=[Flag.TIMEOUT.value], error="timed out after 60 s (full stage)")
    marked = mark_cpu_size_limit(dataclasses.replace(timeout, flags=list(timeout.flags)), True)
    assert marked.flags == ["timeout", "cpu_size_limit"] and "could not be reduced" in marked.error
    assert mark_cpu_size_limit(dataclasses.replace(timeout, flags=["timeout"]), False).flags == ["timeout"]
    wrong = VerifyResult(Stage.FULL, flags=[Flag.OUTPUT_MISMATCH.value])
    assert mark_cpu_size_limit(wrong, True).flags == ["output_mismatch"]  # only timeouts are the machine's


def test_verifier_judges_a_big_task_at_reduced_shapes(verifier):
    result = verifier.verify(BIG_RELU, code=GOOD)
    assert result.correct, result.error
    assert Flag.REDUCED_SHAPES.value in result.flags


def test_the_gpu_tiny_shape_keeps_divisibility_by_16_so_one_compilation_serves_every_trial():
    from tritonrl.tasks.variants import find_constants, tiny_variant

    task = get_task("l2_gemm_bias_relu")
    original = {c.name: c.value for c in find_constants(task.source)}
    gpu_tiny = {c.name: c.value for c in find_constants(tiny_variant(task, same_divisibility=True).source)}
    cpu_tiny = {c.name: c.value for c in find_constants(tiny_variant(task).source)}
    assert gpu_tiny != original and gpu_tiny != cpu_tiny
    for name, value in original.items():
        if isinstance(value, int) and value > 1:
            assert (value % 16 == 0) == (gpu_tiny[name] % 16 == 0), (name, value, gpu_tiny[name])


def test_on_a_gpu_each_alternative_shapes_divisibility_class_gets_a_tiny_trial_cpu_none():
    """Triton compiles per divisibility class (by 16) of its integer arguments: a tiny trial per class the full
    trials use compiles the candidate's kernels in the tiny stage, off the GPU's lease."""
    from tritonrl.tasks.variants import find_constants

    task = next(t for t in load_tasks("bundled") if t.name == "l2_gemm_bias_relu")
    gpu = build_trials(task, VerifyConfig(), device="cuda")
    sizes = {t.name: {c.name: c.value for c in find_constants(t.source)} for t in gpu}
    tiny_classes = {tuple(v % 16 == 0 for v in sizes[t.name].values()) for t in gpu if t.stage == "tiny"}
    full_classes = {tuple(v % 16 == 0 for v in sizes[t.name].values()) for t in gpu if t.stage == "full"}
    assert full_classes <= tiny_classes and len(full_classes) == 2  # the timing shape's and the alternatives'
    assert all(max(sizes[t.name].values()) <= 64 for t in gpu if t.stage == "tiny")
    assert [t.name for t in build_trials(task, VerifyConfig(), device="cpu") if t.stage == "tiny"] == ["tiny"]


def test_gpu_full_trials_use_a_bundled_tasks_timing_shape_cpu_does_not():
    from tritonrl.tasks.variants import timing_variant, tiny_variant

    task = next(t for t in load_tasks("bundled") if t.name == "l2_gemm_bias_relu")
    timing = timing_variant(task)
    gpu = build_trials(task, VerifyConfig(), device="cuda")
    assert [t.name for t in gpu] == ["tiny", "tiny_alt1", "full0", "full1", "full2", "full3", "full4"]
    assert gpu[0].source == tiny_variant(task, same_divisibility=True).source  # the tiny shape, sizes that 16 divided still divided by 16
    full = [t for t in gpu if t.stage == "full"]
    assert full[0].source == timing.source and full[0].task_key == timing.key  # timed: the first full trial
    assert task_cost(full[1].source).flops > 2**33  # alternative shapes are around the timing shape, not the task
    assert not gpu.reduced and gpu.flags == [] and not gpu.oversize  # a timing shape is not a reduction
    cpu = build_trials(task, VerifyConfig(), device="cpu")
    assert cpu[1].source == task.source and not cpu.reduced  # on the CPU nothing changes


def test_each_full_trial_has_its_shape_and_value_regime():
    """Plain base; the edge shape (2^j + 1) small; x3 on the base (this task has no wider shape) with a third of its
    rows 100 RMS below zero; 2^j with a third of its rows 100 RMS above; the edge x3 and spread. Without alternative
    shapes the base takes their regimes."""
    def layout(trials):
        return [(t.task_key.split("@")[1].split(":")[0] if "@" in t.task_key else "base", t.scale, t.spread, t.shift)
                for t in trials if t.stage == "full"]

    trials = build_trials(TASKS["wide_softmax"], VerifyConfig(), device="cpu")
    assert layout(trials) == [("base", 1.0, 1.0, 0.0), ("alt1", 0.01, 1.0, 0.0), ("base", 3.0, 1.0, -100.0),
                              ("alt2", 1.0, 1.0, 100.0), ("alt1", 3.0, 100.0, 0.0)]
    no_alts = build_trials(TASKS["wide_softmax"], VerifyConfig(alt_shapes=False), device="cpu")
    assert [entry[1:] for entry in layout(no_alts)] == [
        (1.0, 1.0, 0.0), (0.01, 1.0, 0.0), (3.0, 1.0, -100.0), (1.0, 1.0, 100.0), (3.0, 100.0, 0.0)]


def test_the_regimes_trials_make_the_values_they_name():
    trials = {t.name: t for t in build_trials(TASKS["wide_softmax"], VerifyConfig(), device="cpu")}
    module = load_task_module(trials["full0"].source)
    _, (plain,) = make_inputs(module, trials["full0"])
    _, (small,) = make_inputs(load_task_module(trials["full1"].source), trials["full1"])
    _, (shifted,) = make_inputs(load_task_module(trials["full3"].source), trials["full3"])
    rms = float(plain.square().mean().sqrt())
    assert float(small.abs().max()) < 0.1 * rms  # every block small
    row_mean, row_std = shifted.mean(dim=1), shifted.std(dim=1)
    far = row_mean.abs() > 50 * row_std  # a third of the rows far from zero against their spread, the rest randn's
    assert far.tolist() == [True, False, False, False] and float(shifted[0].min()) > 0
    assert float(shifted[1:].abs().max()) < 10 * rms


def _softmax_precision_cheats(x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The red team's class-5 softmax cheats (tests/verify/fixtures/redteam/c5_softmax_*.py) in torch: each changes
    only wide rows whose largest probability keeps the normalized small-output check off."""
    p = torch.softmax(x, dim=1)
    on = (x.shape[1] >= 4096) & (p.amax(dim=1, keepdim=True) >= 1.2e-3)
    d = x - x.amax(dim=1, keepdim=True)
    fast = (1 + d / 64).clamp(min=0) ** 64
    return {"bf16": torch.where(on & (p < 1e-2), p.bfloat16().float(), p),
            "drop_small": torch.where(on & (p < 9e-5), 0.0, p),
            "fast_exp": torch.where(on & (p < 2e-3), fast / fast.sum(dim=1, keepdim=True), p),
            "fp16": torch.where(on, p.half().float(), p),
            "row_sum_off": torch.where(on & (p < 1.5e-3), p * 1.05, p)}


def test_the_plain_scaled_trial_catches_the_softmax_precision_cheats_on_every_draw():
    """Input values are secret (the judge's salt): a cheat caught on some draws only is a flake in CI and a hole in
    training. On randn values a 50000-wide row's largest probability is ~1e-3, so these cheats switch on in about
    half the draws; the spread trial drives a row to one value and zeros, where they match. The plain x3 trial
    switches them on always and the L2 check sees them (it was missing, and the five fixtures passed ~1 run in 10)."""
    config = VerifyConfig()
    trial = next(t for t in build_trials(TASKS["wide_softmax"], config, device="cpu")
                 if t.scale == config.scaled_input_factor and t.spread == 1)
    module = load_task_module(trial.source)
    for draw in range(12):
        _, (x,) = make_inputs(module, dataclasses.replace(trial, input_seed=1000 + draw))
        p = torch.softmax(x, dim=1)
        for name, got in _softmax_precision_cheats(x).items():
            assert compare_outputs([p], [got], ["cpu"], *config.tolerances(), "full") is not None, (name, draw)


def test_on_the_cpu_the_scaled_trial_runs_on_the_wide_shape_where_a_task_has_one():
    """A row block fixed at 512 passes every shape of a 384-wide layernorm; the wide shape (3 rows, the real scale's
    4096 wide: it fits twice the task's cost) shows it (the fifteenth red team's
    ``integrity/r15_layernorm_fixed_block_512``). A GPU judges at the real scale."""
    layernorm = get_task("l1_layernorm")
    cpu = {t.name: t for t in build_trials(layernorm, VerifyConfig(), device="cpu")}
    assert "@wide" in cpu["full2"].task_key and "hidden = 4096" in cpu["full2"].source
    assert (cpu["full2"].scale, cpu["full2"].shift) == (3.0, -100.0)
    gpu = {t.name: t for t in build_trials(layernorm, VerifyConfig(), device="cuda")}
    assert "@wide" not in gpu["full2"].task_key


def test_the_wide_shape_reaches_the_real_scale_and_a_gemm_gets_a_deep_one():
    """The thirty-first red team's: a row block fixed at 4096 passed the softmax's 4x + 1 = 4001 (the real scale is
    8000), and a GEMM loading all of K as one 256-wide tile passed every CPU K (at most 200; no GEMM had a wide
    shape). Now the softmax's wide shape is 3 x 8000, and a GEMM's is deep: K past any tile a GPU holds (1040, or the
    real scale if smaller), the rest 16 (a tl.dot's smallest block on a GPU)."""
    import re

    def sizes(name):
        full2 = {t.name: t for t in build_trials(get_task(name), VerifyConfig(), device="cpu")}["full2"]
        return dict((k, int(v)) for k, v in re.findall(r"^(\w+) = (\d+)", full2.source, re.M))

    assert sizes("l1_softmax") == {"batch_size": 3, "dim": 8000}
    assert sizes("l1_matmul") == {"m": 16, "k": 1040, "n": 16}
    gemm = sizes("l2_gemm_sigmoid_sum")
    assert (gemm["batch_size"], gemm["in_features"], gemm["out_features"]) == (16, 1040, 16)


def test_permissive_mode_moves_no_rows():
    """In permissive mode torch's layers feed kernels: a shift through a convolution makes most of a ReLU kernel's
    input one sign, where the ReLU writes torch's values back, a copy by chance (``r5_p_honest_conv_then_relu``)."""
    trials = build_trials(TASKS["wide_softmax"], VerifyConfig(strict=False), device="cpu")
    assert [t.shift for t in trials if t.stage == "full"] == [0.0] * 5
    assert [t.scale for t in trials if t.stage == "full"] == [1.0, 0.01, 3.0, 1.0, 3.0]
