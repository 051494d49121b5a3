"""Messages that say what to do: a TF32 GEMM's mismatch names TF32 and ``input_precision="ieee"`` (and passes at
KernelBench's tolerance), a constructor that fails is a compile-stage failure, static diagnoses come one per line
of code, and a timeout at full size under the interpreter says why."""

from pathlib import Path

import pytest

from tests.verify.conftest import FAST
from tests.verify.tasks import TASKS
from tritonrl.config import VerifyConfig
from tritonrl.errors import ConfigError
from tritonrl.evaluation.metrics import Sample, summarize
from tritonrl.tasks import get_task
from tritonrl.verify import Stage, Verifier, VerifyResult
from tritonrl.verify.parent.hints import full_size_hint, precision_hint, tf32_dot_lines
from tritonrl.verify.shared.verdict import clip_words
from tritonrl.verify.static import diagnosis, run_static_checks

MATMUL = get_task("l1_matmul")
TF32_MATMUL = MATMUL.solution.replace(', input_precision="ieee"', "")
FIXTURES = Path(__file__).parent / "fixtures" / "runtime"


def test_tf32_dots_are_found_by_meaning():
    assert MATMUL.solution != TF32_MATMUL and tf32_dot_lines(TF32_MATMUL)
    assert tf32_dot_lines(MATMUL.solution) == []  # input_precision="ieee"
    code = ("import triton.language as language\nimport triton\n"
            "a = language.dot(x, y)\nb = triton.language.dot(x, y, input_precision='tf32x3')\n"
            "c = tl.dot(x, y, allow_tf32=False)\nd = torch.dot(x, y)\ne = tl.dot(x, y, input_precision='tf32')\n")
    assert tf32_dot_lines(code) == [3, 7]


def mismatch(relative_flag: str = "output_mismatch") -> VerifyResult:
    return VerifyResult(Stage.FULL, valid=True, compiled=True, flags=[relative_flag], error="output 0: 3/9 values off")


def test_precision_hint_only_for_small_errors():
    strict, kb = VerifyConfig(), VerifyConfig(tolerance="kernelbench")
    hint = precision_hint(mismatch(), TF32_MATMUL, 1.2e-3, strict)
    assert 'tl.dot (line 22) rounds fp32 inputs to TF32' in hint and 'input_precision="ieee"' in hint
    assert "--tolerance kernelbench" in hint
    assert "--tolerance" not in precision_hint(mismatch(), TF32_MATMUL, 1.2e-3, kb)  # already at 1e-2
    assert "fp16/bf16" in precision_hint(mismatch("tiny_mismatch"), MATMUL.solution, 5e-4, strict)
    assert precision_hint(mismatch(), TF32_MATMUL, 0.4, strict) is None  # a wrong kernel, not rounding
    assert precision_hint(mismatch("nonfinite_output"), TF32_MATMUL, 1e-3, strict) is None


def test_kernelbench_tolerance_is_a_documented_setting_that_refuses_conflicts():
    atol, rtol = VerifyConfig(tolerance="kernelbench").tolerances()
    assert set(atol.values()) == set(rtol.values()) == {1e-2}
    assert VerifyConfig().tolerances()[0]["float32"] == 1e-4
    with pytest.raises(ConfigError, match="verify.tolerance = kernelbench sets atol and rtol"):
        VerifyConfig(tolerance="kernelbench", atol={"float32": 1e-3, "float16": 1e-2, "bfloat16": 1e-2})
    doc = (Path(__file__).parents[2] / "docs" / "evaluation.md").read_text()
    assert "verify.tolerance: kernelbench" in doc and "1e-4" in doc


def test_a_tf32_gemm_is_told_why_and_passes_at_kernelbench_tolerance(verifier, ref_cache_dir):
    strict = verifier.verify(MATMUL, code=TF32_MATMUL)
    assert not strict.correct and {"tiny_mismatch", "output_mismatch"} & set(strict.flags)
    assert strict.error.splitlines()[-1].startswith("hint: the error (")
    assert 'tl.dot (line 22) rounds fp32 inputs to TF32' in strict.error
    with Verifier(VerifyConfig(cache_dir=ref_cache_dir, tolerance="kernelbench", **FAST)) as loose:
        assert loose.verify(MATMUL, code=TF32_MATMUL).correct


def test_a_constructor_that_fails_is_a_compile_failure(verifier):
    result = verifier.verify(TASKS["relu"], code=(FIXTURES / "init_raise.py").read_text())
    assert result.stage is Stage.COMPILE and "init_error" in result.flags
    assert result.valid and not result.compiled and not result.tiny_correct
    assert "refusing to be built" in result.error
    assert summarize([Sample("relu", 1, result)])["compiled_rate"] == 0.0


NESTED = '''import torch
import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x ** 3)))
        z = y.sum() + x.mean()
        return z
'''


def test_static_diagnoses_one_per_line_the_most_specific_never_cut_mid_word():
    violations = run_static_checks(NESTED)
    assert len(violations) == 11  # every sub-expression of lines 13 and 14
    text = diagnosis(violations)
    assert text.count("line 13:") == 1 and text.count("line 14:") == 1
    assert "line 13: torch_compute: `x ** 3` is tensor arithmetic" in text
    assert "line 14: torch_compute: `y.sum()` is a tensor method" in text
    short = diagnosis(violations, limit=200)
    assert short.startswith("line 13: ") and short.endswith("; and 1 more line with violations")
    assert len(short) <= 200
    assert clip_words("the tolerance is tested here", 20) == "the tolerance is..."
    assert clip_words("the tolerance is tested here", 19) == "the tolerance is..."
    assert clip_words("the tolerance is tested here", 18) == "the tolerance..."
    assert clip_words("tolerances", 8) == "toler..."  # one word longer than the limit: cut, nothing else fits


def test_a_full_size_timeout_under_the_interpreter_says_why():
    big = get_task("l2_gemm_bias_relu")  # bundled sizes are small; grow them past the CPU budget
    big = type(big)(name="big_gemm", level=2, source=big.source.replace("in_features = ", "in_features = 256 * "))
    timeout = VerifyResult(Stage.FULL, valid=True, compiled=True, tiny_correct=True, flags=["timeout"],
                           error="timed out after 20 s (full stage)")
    full_size = VerifyConfig(cpu_max_numel=None, cpu_max_flops=None)
    hint = full_size_hint(timeout, big, full_size, "cpu", reduced=False)
    assert hint and "--full-size" in hint and "interpreter" in hint
    assert full_size_hint(timeout, big, VerifyConfig(), "cpu", reduced=True) is None  # reduced: not the reason
    assert full_size_hint(timeout, get_task("l1_relu"), full_size, "cpu", reduced=False) is None  # small task
    assert full_size_hint(timeout, big, full_size, "cuda", reduced=False) is None
