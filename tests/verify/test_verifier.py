"""The funnel's stages, the parent-side comparison, the shared reference cache and the CLI."""

import json
from pathlib import Path

import pytest
import torch

from tests.verify.tasks import TASKS
from tritonrl.cli import main
from tritonrl.common.reward import compute_reward
from tritonrl.config import VerifyConfig
from tritonrl.verify import Flag, Stage, Verifier, VerifyItem
from tritonrl.verify.judge.compare import compare_trial, inputs_changed
from tritonrl.verify.shared.trial import build_model

RUNTIME = Path(__file__).parent / "fixtures" / "runtime"
GOOD = (RUNTIME / "good_relu.py").read_text()
ATOL = {"float32": 1e-4}
RTOL = {"float32": 1e-4}


# ---------------------------------------------------------------- funnel stages
def test_good_candidate_is_correct_and_untimed_on_cpu(verifier):
    result = verifier.verify(TASKS["relu"], code=GOOD)
    assert (result.stage, result.valid, result.compiled, result.tiny_correct, result.correct) == (
        Stage.DONE, True, True, True, True)
    assert result.runtime_ms is None and result.speedup is None
    assert Flag.TIMING_UNAVAILABLE.value in result.flags
    assert compute_reward(result) == 1.0


def test_completion_is_extracted(verifier):
    completion = f"Here is my kernel.\n```python\n{GOOD}\n```\n"
    assert verifier.verify(TASKS["relu"], completion=completion).correct


def test_completion_without_code_fails_extract(verifier):
    result = verifier.verify(TASKS["relu"], completion="I cannot write this kernel.")
    assert result.stage == Stage.EXTRACT and Flag.NO_CODE.value in result.flags and not result.valid


def test_static_violation_stops_before_running(verifier):
    code = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    result = verifier.verify(TASKS["relu"], code=code)
    assert result.stage == Stage.STATIC and not result.valid and not result.compiled
    assert Flag.NO_TRITON_KERNEL.value in result.flags


def test_import_error_names_the_line(runtime_verifier):
    code = GOOD.replace("class ModelNew", "undefined_name + 1\n\n\nclass ModelNew")
    result = runtime_verifier.verify(TASKS["relu"], code=code)
    assert result.stage == Stage.COMPILE and Flag.IMPORT_ERROR.value in result.flags
    assert "NameError" in result.error and "undefined_name + 1" in result.error
    assert len(result.error) <= 500


def test_runtime_error_names_the_line(runtime_verifier):
    code = GOOD.replace("n = x.numel()", "n = x.numel() // 0")
    result = runtime_verifier.verify(TASKS["relu"], code=code)
    assert result.stage == Stage.TINY and Flag.RUNTIME_ERROR.value in result.flags
    assert "ZeroDivisionError" in result.error and "x.numel() // 0" in result.error


def test_verify_many_preserves_order(runtime_verifier):
    wrong = GOOD.replace("tl.where(x > 0, x, 0.0)", "tl.where(x > 0, x, 1.0)")
    codes = [GOOD, wrong, GOOD, wrong]
    results = runtime_verifier.verify_many([VerifyItem(TASKS["relu"], code=c) for c in codes])
    assert [r.correct for r in results] == [True, False, True, False]


def test_reference_computed_once_per_task(runtime_verifier):
    """Candidates of one task share its references: a fresh task's trials are computed once, not once per call."""
    task = TASKS["relu"].with_variant("", TASKS["relu"].source + "\n# a distinct task key\n")
    before = runtime_verifier.stats()
    results = runtime_verifier.verify_many([VerifyItem(task, code=GOOD)] * 3)
    after = runtime_verifier.stats()
    assert all(r.correct for r in results)
    assert after["computed"] - before["computed"] == 6  # tiny + five full trials, once
    assert after["memory_hits"] - before["memory_hits"] == 12  # the other two candidates


# ---------------------------------------------------------------- the judge's comparison
def _ref(out):
    return {"outputs": [out], "devices": ["cpu"]}


def _got(out, device="cpu"):
    return {**_ref(out), "devices": [device]}


def test_compare_accepts_within_tolerance():
    e = torch.randn(100)
    assert compare_trial(_ref(e), _got(e + 1e-6), ATOL, RTOL, "full") is None


def test_compare_tiny_magnitudes_need_relative_accuracy():
    e = torch.rand(1000) * 2e-5 + 1e-6
    off = e * 1.5  # within atol everywhere, 50% relative error
    mismatch = compare_trial(_ref(e), _got(off), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.OUTPUT_MISMATCH
    zeros = compare_trial(_ref(e), _got(torch.zeros(1000)), ATOL, RTOL, "full")
    assert zeros is not None and zeros.flag == Flag.DEGENERATE_OUTPUT


@pytest.mark.parametrize("got, flag", [
    (torch.full((4,), float("nan")), Flag.NONFINITE_OUTPUT),
    (torch.ones(4, dtype=torch.float16), Flag.DTYPE_MISMATCH),
    (torch.ones(2, 2), Flag.SHAPE_MISMATCH),
    (torch.nn.Parameter(torch.ones(4)), Flag.NOT_PLAIN_TENSOR),
    ("mymodule.LazyTensor", Flag.NOT_PLAIN_TENSOR),
])
def test_compare_flags(got, flag):
    mismatch = compare_trial(_ref(torch.ones(4)), _got(got), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == flag


def _cases_across_chunks(n: int) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Outputs whose verdict rests on a value far from the first chunk (``n`` spans several)."""
    gen = torch.Generator().manual_seed(3)
    e = torch.randn(n, generator=gen)
    nan_late, worst_late, special = e.clone(), e.clone(), e.clone()
    nan_late[n - 5] = float("nan")
    worst_late[n - 7] += 0.05
    special[: n // 2] = float("nan")  # the reference's NaNs fill the first chunks; its finite values start late
    both = special.clone()
    both[-1] = 0.25
    return {"ok": (e, e + 1e-7), "nan_late": (e, nan_late), "worst_late": (e, worst_late),
            "constant": (e, torch.full((n,), 0.5)), "special_ok": (special, special.clone()),
            "special_constant": (special, torch.where(special.isnan(), special, 0.5)),
            "special_off": (special, both)}


@pytest.mark.parametrize("masked", [False, True], ids=["finite_reference_path", "masked_path"])
def test_compare_verdicts_do_not_depend_on_the_chunk_size(monkeypatch, masked):
    """The figures are gathered chunk by chunk on the device and read back once: whether an output fits in one
    chunk or spans many, every verdict and message is the same (the first finite value, the worst error, the
    NaNs may all sit in a later chunk). ``masked_path``: the path of references with NaN/Inf, taken by all."""
    from tritonrl.verify.judge import compare

    if masked:
        monkeypatch.setattr(compare, "_add_chunk", compare._add_chunk_masked)

    def verdicts():
        return {name: compare.compare_outputs([e], [a], ["cpu"], ATOL, RTOL, "full")
                for name, (e, a) in _cases_across_chunks(20_000).items()}

    whole = verdicts()
    monkeypatch.setattr(compare, "CHUNK", 1 << 10)
    chunked = verdicts()
    assert whole["ok"] is None and whole["special_ok"] is None
    assert whole["nan_late"].flag == Flag.NONFINITE_OUTPUT and whole["constant"].flag == Flag.DEGENERATE_OUTPUT
    assert whole["worst_late"].flag == Flag.OUTPUT_MISMATCH and "1/20000" in whole["worst_late"].message
    assert whole["special_constant"].flag == Flag.DEGENERATE_OUTPUT and whole["special_off"] is not None
    assert {k: v and (v.flag, v.message) for k, v in whole.items()} == \
        {k: v and (v.flag, v.message) for k, v in chunked.items()}


def test_a_nan_output_is_caught_even_if_the_range_reduction_drops_nans(monkeypatch):
    """A NaN compares false with every band, so a finite reference's comparison must not rest on one reduction
    propagating it: with ``aminmax`` ignoring NaN, the error's norm still shows it."""
    real = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda t: real(torch.nan_to_num(t)))
    e = torch.randn(1000, generator=torch.Generator().manual_seed(2))
    a = e.clone()
    a[17] = float("nan")
    mismatch = compare_trial(_ref(e), _got(a), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.NONFINITE_OUTPUT and "1 NaN/Inf" in mismatch.message


def test_compare_detects_input_mutation_and_device():
    e, x = torch.randn(4), torch.randn(3)
    assert inputs_changed([x, 2], [x.clone(), 2]) is None
    changed = x.clone()
    changed[1] = torch.nextafter(changed[1], torch.tensor(float("inf")))  # one value, one ulp is enough
    assert inputs_changed([x], [changed]).flag == Flag.INPUT_MUTATION
    assert compare_trial(_ref(e), _got(e, device="cuda"), ATOL, RTOL, "full").flag == Flag.DEVICE_MISMATCH
    assert compare_trial(_ref(e), None, ATOL, RTOL, "full").flag == Flag.NOT_PLAIN_TENSOR


def test_randomized_parameters_match_and_differ_from_defaults():
    a = build_model(torch.nn.LayerNorm, [8], seed=3, randomize=True, device="cpu", dtype=None)
    b = build_model(torch.nn.LayerNorm, [8], seed=3, randomize=True, device="cpu", dtype=None)
    assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
    assert not torch.equal(a.weight, torch.ones(8)) and not torch.equal(a.bias, torch.zeros(8))


class _Tables(torch.nn.Module):
    """Tables kept as parameters (the twenty-fourth red team): one padded with zeros so its mean is tiny, one in
    the NaN payloads of float64, one of integers."""

    def __init__(self):
        super().__init__()
        table = torch.linspace(0.01, 1.0, 64)
        self.padded = torch.nn.Parameter(torch.cat([table, torch.zeros(1 << 16)]))
        payloads = (0x7FF8000000000000 | torch.arange(1, 65, dtype=torch.int64)).view(torch.float64)
        self.hidden = torch.nn.Parameter(payloads.clone())
        self.ints = torch.nn.Parameter(torch.arange(64, dtype=torch.int64), requires_grad=False)


def test_perturbation_moves_every_value_of_a_table_kept_as_a_parameter():
    made = build_model(_Tables, [], seed=3, randomize=False, device="cpu", dtype=None)
    moved = build_model(_Tables, [], seed=3, randomize=True, device="cpu", dtype=None)
    change = ((moved.padded[:64] - made.padded[:64]).abs() / made.padded[:64]).detach()
    assert float(change.min()) > 1e-3  # by the element's own size, not the (tiny) mean
    assert torch.isnan(moved.hidden).all()
    assert len(set(moved.hidden.detach().view(torch.int64).tolist())) == 1  # one NaN: no payload survives
    assert bool((moved.ints != made.ints).all())
    again = build_model(_Tables, [], seed=3, randomize=True, device="cpu", dtype=None)
    assert torch.equal(moved.padded, again.padded) and torch.equal(moved.ints, again.ints)


class _Bits(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mask = torch.nn.Parameter(torch.rand(4096) > 0.5, requires_grad=False)


def test_a_bool_parameter_has_a_tenth_of_its_bits_flipped_the_same_way_each_time():
    """A bool parameter has no magnitude to scale noise by (``abs`` of a bool raises: a model holding a mask as a
    parameter failed the judge's own construction); a table of bits moves too."""
    made = build_model(_Bits, [], seed=3, randomize=False, device="cpu", dtype=None)
    moved = build_model(_Bits, [], seed=3, randomize=True, device="cpu", dtype=None)
    flipped = float((moved.mask != made.mask).float().mean())
    assert 0.05 < flipped < 0.15 and moved.mask.dtype == torch.bool
    again = build_model(_Bits, [], seed=3, randomize=True, device="cpu", dtype=None)
    assert torch.equal(moved.mask, again.mask)


# ---------------------------------------------------------------- CLI
def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_cli_batch_json_and_exit_codes(tmp_path, capsys):
    task_file = tmp_path / "relu_task.py"
    task_file.write_text(TASKS["relu"].source)
    (tmp_path / "cands").mkdir()
    (tmp_path / "cands" / "a_good.py").write_text(GOOD)
    (tmp_path / "cands" / "b_bad.py").write_text(GOOD.replace("0.0), mask=mask)", "1.0), mask=mask)"))
    args = ["verify", "--task", str(task_file), "--device", "cpu", "--timeout", "20", "--json"]
    assert main(args + ["--solution", str(tmp_path / "cands" / "a_good.py")]) == 0
    single = _last_json(capsys)
    assert {"correct", "valid", "compiled", "stage", "flags", "error", "speedup", "reward"} <= set(single)
    assert single["correct"] is True and single["speedup"] is None
    assert main(args + ["--solution", str(tmp_path / "cands")]) == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    verdicts = sorted((line["file"], line["correct"]) for line in lines[:-1])  # in the order they finished
    assert [correct for _, correct in verdicts] == [True, False]
    assert lines[-1]["summary"] == {"candidates": 2, "judged": 2, "correct": 1, "declined": 0, "unreadable": 0,
                                    "interrupted": False, "not_judged": []}


def test_cli_bad_usage_exits_2(tmp_path, capsys):
    assert main(["verify", "--task", "no_such_task_xyz", "--solution", str(RUNTIME / "good_relu.py")]) == 2
    assert main(["verify", "--task", "l1_relu", "--solution", str(tmp_path / "missing.py")]) == 2


# ---------------------------------------------------------------- GPU (skipped without CUDA)
@pytest.mark.gpu
def test_gpu_candidate_is_timed(tmp_path):
    from tritonrl.config import VerifyConfig
    from tritonrl.verify import Verifier

    config = VerifyConfig(device="cuda", cache_dir=str(tmp_path), timed_trials=20, warmup=3)
    with Verifier(config) as gpu_verifier:
        result = gpu_verifier.verify(TASKS["relu_timed"], code=GOOD)
        stale = gpu_verifier.verify(TASKS["relu"], code=(RUNTIME / "stale_buffer.py").read_text())
    assert result.correct and result.stage == Stage.DONE, result.error
    assert result.runtime_ms and result.runtime_ms > 0 and result.speedup and result.speedup > 0
    assert Flag.TIMING_UNAVAILABLE.value not in result.flags and Flag.TIMING_UNRESOLVED.value not in result.flags
    assert result.timing["fresh_sets"]["made_before"] >= 10
    assert not stale.correct


def test_compare_accepts_reordered_fp32_sums_near_zero():
    """A matvec summed block by block in fp32 (as a Triton kernel does) against the exact one: its errors scale with
    the output's RMS, and where a value cancels to ~0 they exceed ``atol + rtol*|e|``; honest, so accepted."""
    gen = torch.Generator().manual_seed(0)
    a, x = torch.randn(4096, 8192, generator=gen) * 3, torch.randn(8192, generator=gen) * 3
    expected = (a.double() @ x.double()).float()
    blocked = torch.zeros(4096)
    for k in range(0, 8192, 128):
        blocked = blocked + (a[:, k:k + 128] * x[k:k + 128]).sum(1)
    old_band = ATOL["float32"] + RTOL["float32"] * expected.abs()
    assert ((blocked - expected).abs() > old_band).any()  # what rejected the honest GPU solutions
    assert compare_trial(_ref(expected), _got(blocked), ATOL, RTOL, "full") is None
    assert compare_trial(_ref(expected.relu()), _got(blocked.relu()), ATOL, RTOL, "full") is None  # half zeros


def test_compare_rejects_a_wrong_value_above_the_scale_band():
    e = torch.randn(10000, generator=torch.Generator().manual_seed(1))
    wrong = e.clone()
    wrong[123] += 1e-2  # one value off by 1% of the output's RMS: far beyond rounding
    mismatch = compare_trial(_ref(e), _got(wrong), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.OUTPUT_MISMATCH and "1/10000" in mismatch.message


def test_a_verifier_failure_is_that_items_verdict(runtime_verifier, monkeypatch, caplog):
    """A failure of the verifier itself on one item (here a full disk) is that item's verdict; the batch goes on."""
    import errno

    original = runtime_verifier._judge

    def flaky(gpu, code, *args, **kwargs):
        if code.startswith("# the disk fills up"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(gpu, code, *args, **kwargs)

    monkeypatch.setattr(runtime_verifier, "_judge", flaky)
    good = (RUNTIME / "good_relu.py").read_text()
    items = [VerifyItem(TASKS["relu"], code="# the disk fills up\n" + good), VerifyItem(TASKS["relu"], code=good)]
    with caplog.at_level("ERROR"):
        first, second = runtime_verifier.verify_many(items)
    assert not first.correct and first.flags == [Flag.VERIFIER_ERROR.value] and "No space left" in first.error
    assert compute_reward(first) == 0.0
    assert second.correct, second.error
    assert any("verifier error" in r.getMessage() for r in caplog.records)


def test_an_item_left_when_the_verifier_is_closed_is_not_judged_and_not_an_error(ref_cache_dir, caplog):
    """A caller that closes the verifier with items in flight (a time box) gets "not judged", logged quietly."""
    verifier = Verifier(VerifyConfig(static_checks=False, cache_dir=ref_cache_dir, device="cpu", workers=1))
    verifier.close()
    with caplog.at_level("INFO"):
        result = verifier.verify(TASKS["relu"], code=(RUNTIME / "good_relu.py").read_text())
    assert not result.correct and result.flags == [Flag.VERIFIER_ERROR.value], result
    assert result.error == "not judged: the verifier was closed"
    assert compute_reward(result) == 0.0
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.records


def test_an_unreadable_zygote_message_restarts_the_zygote_and_hangs_nothing(tmp_path, monkeypatch, caplog):
    """If the parent cannot read one of the zygote's messages, that zygote is ended (its jobs in flight count as
    crashed, at once) and the next job starts a new one; before, the reader thread died and every later wait ran
    to its timeout. Here the unreadable message is the first job's exit (the judge's, at the end): the candidate
    was judged already, and the next one gets a new zygote and a new judge."""
    import time

    from tritonrl.verify.parent import zygote_client

    real, calls = zygote_client.Exit, []

    def exit_once_unreadable(code, sig):
        calls.append(code)
        if len(calls) == 1:
            raise ValueError("unreadable")
        return real(code, sig)

    good = (RUNTIME / "good_relu.py").read_text()
    with Verifier(VerifyConfig(static_checks=False, cache_dir=str(tmp_path), device="cpu", workers=1,
                               timeout_s=60.0)) as verifier:
        monkeypatch.setattr(zygote_client, "Exit", exit_once_unreadable)
        starts, real_start = [], verifier._zygote._start
        monkeypatch.setattr(verifier._zygote, "_start", lambda: (starts.append(1), real_start())[1])
        start = time.monotonic()
        with caplog.at_level("ERROR"):
            first = verifier.verify(TASKS["relu"], code=good)
            second = verifier.verify(TASKS["relu"], code=good)
        assert time.monotonic() - start < 45, "a job waited for an exit that was never going to be read"
        assert len(starts) == 2, starts  # the first zygote, then its replacement; no more
    assert any("unreadable message" in r.getMessage() for r in caplog.records)
    assert first.correct and second.correct, (first.error, second.error)


def test_compare_band_stays_tight_on_the_bulk_of_a_heavy_tailed_output():
    """exp of scaled inputs: a few huge values make the RMS ~2800x the median; 2% errors on the bulk must fail."""
    e = torch.exp(3 * torch.randn(1 << 20, generator=torch.Generator().manual_seed(0)))
    sloppy = torch.where(e < 10, e * 1.02, e)
    mismatch = compare_trial(_ref(e), _got(sloppy), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.OUTPUT_MISMATCH
    assert compare_trial(_ref(e), _got(e * (1 + 1e-6)), ATOL, RTOL, "full") is None


def test_compare_scale_is_not_taken_from_a_few_columns():
    """Every 64th column 1000x larger: a sample strided by the row length's divisor would see only those columns
    and open the band for the rest (to ~1e-2); 0.2% errors on ordinary columns must fail."""
    e = torch.randn(1024, 4096, generator=torch.Generator().manual_seed(2))
    e[:, ::64] *= 1000
    sloppy = e.clone()
    sloppy[:, 1::64] *= 1.002
    mismatch = compare_trial(_ref(e), _got(sloppy), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.OUTPUT_MISMATCH


def test_compare_band_stays_tight_beside_a_minority_of_large_channels():
    """A fifth of the columns 1000x larger: the RMS (~450) and the 90% quantile are theirs; 0.5% errors on the
    ordinary columns must fail (the L2 check, dominated by the large columns, cannot see them)."""
    e = torch.randn(512, 1000, generator=torch.Generator().manual_seed(3))
    e[:, :200] *= 1000
    sloppy = e.clone()
    sloppy[:, 200:] *= 1.005
    mismatch = compare_trial(_ref(e), _got(sloppy), ATOL, RTOL, "full")
    assert mismatch is not None and mismatch.flag == Flag.OUTPUT_MISMATCH


def test_the_monitors_dispatch_mode_never_imports_dynamo():
    """The first dispatch of a plain TorchDispatchMode imports torch._dynamo (seconds); the monitor's mode, and the
    zygote's warm-up, must not, and must still see every op."""
    import subprocess
    import sys

    script = (
        "import sys, torch\n"
        "from torch.utils._python_dispatch import TorchDispatchMode\n"
        "from tritonrl.verify.child.monitor import without_dynamo_import\n"
        "from tritonrl.verify.zygote import warm_dispatch_mode\n"
        "seen = []\n"
        "class M(TorchDispatchMode):\n"
        "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
        "        seen.append(str(func))\n"
        "        return func(*args, **(kwargs or {}))\n"
        "warm_dispatch_mode()\n"
        "with without_dynamo_import(M)():\n"
        "    (torch.ones(3) * 2).sum()\n"
        "print('dynamo' if 'torch._dynamo' in sys.modules else 'none', len(seen))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    imported, ops = out.stdout.split()
    assert imported == "none"
    assert int(ops) >= 2  # ones, mul, sum: the mode still sees the ops


def test_a_batch_reports_its_cold_start_and_each_verdicts_span(runtime_verifier):
    from tritonrl.verify import VerifyItem

    results = runtime_verifier.verify_many([VerifyItem(TASKS["relu"], code=GOOD)])
    startup = runtime_verifier.startup
    assert startup["zygote"]["ready"] > 0 and startup["zygote"]["imports"] > 0
    assert "dispatch_mode" in startup["zygote"]  # the candidates' warm-up, before the first candidate fork
    assert startup["judges"]["cpu"]["ready"] > 0
    start, end = results[0].timing["span"]
    session = results[0].timing["session_span"]
    assert start <= session[0] <= session[1] <= session[2] <= end
    asked, forked, child_started = results[0].timing["fork_span"]  # where a late fork or a slow child start shows
    assert start <= asked <= forked <= session[2] and asked <= child_started <= session[1]
    assert startup["zygote"]["ready_at"] <= forked


def test_start_wait_returns_a_verifier_ready_for_its_first_candidate():
    """``start(wait=True)``: the judge up, the zygote's candidate warm-ups done (reported once they are), and the
    plans' meta-device machinery loaded, before the caller's clock starts (a trainer's first step)."""
    with Verifier(VerifyConfig(device="cpu", workers=1, timeout_s=60)) as verifier:
        verifier.start(wait=True)
        startup = verifier.startup
        assert startup["judges"]["cpu"]["ready"] > 0
        assert "dispatch_mode" in startup["zygote"]  # warmed after the judge's fork, before any candidate
        result = verifier.verify_many([VerifyItem(TASKS["relu"], code=GOOD)])[0]
        assert result.correct, result.error
        assert result.timing["stage_s"]["start_wait"] >= 0.0  # the judge's CUDA-start turn (no wait on a CPU)


def test_a_plan_that_fails_after_the_session_opened_ends_it_cleanly(monkeypatch):
    """The session opens (the child starting) before the trials are planned: a task whose plan fails then gets
    its ``reference_error`` verdict, its child is ended, and the next candidate is judged as usual."""
    from tritonrl.errors import TaskError
    from tritonrl.verify.parent import verifier as verifier_module

    real = verifier_module.build_trials
    calls = []

    def plan_once_broken(task, config, device=None):
        calls.append(task.name)
        if len(calls) == 1:
            raise TaskError(f"{task.name}: no shape of it runs")
        return real(task, config, device)

    monkeypatch.setattr(verifier_module, "build_trials", plan_once_broken)
    with Verifier(VerifyConfig(device="cpu", workers=1, timeout_s=60)) as verifier:
        broken = verifier.verify(TASKS["relu"], code=GOOD)
        assert Flag.REFERENCE_ERROR.value in broken.flags and "no shape of it runs" in broken.error
        assert not broken.correct
        good = verifier.verify(TASKS["relu"], code=GOOD)
        assert good.correct, good.error
        assert good.timing["stage_s"]["plan_wait"] >= 0.0  # the judge waited for the trials after the child started
