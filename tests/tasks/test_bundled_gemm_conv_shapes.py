"""The GEMM and convolution fusion solutions are shape-general, not tuned to their task's default constants.

Each task's module-level constants are rewritten to odd sizes (not multiples of any block size, some larger than one
block) and to tiny ones (smaller than every block), and the reference solution must still match. Catches
hard-coded shapes, missing masks and padding lanes leaking into reductions.
"""

import re
from pathlib import Path

import pytest

from tests.helpers.reference_check import check_solution

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "tritonrl" / "tasks" / "bundled"

GEMM_ODD = {"batch_size": 37, "in_features": 50, "out_features": 70}
GEMM_TINY = {"batch_size": 1, "in_features": 5, "out_features": 3}
CONV_ODD = {"batch_size": 3, "in_channels": 5, "out_channels": 19, "height": 13, "width": 11, "kernel_size": 5}
CONV_TINY = {"batch_size": 1, "in_channels": 1, "out_channels": 2, "height": 5, "width": 4, "kernel_size": 3}

# task name -> {variant name -> constants to override}
OVERRIDES = {
    **{name: {"odd": GEMM_ODD, "tiny": GEMM_TINY} for name in [
        "l2_gemm_bias_relu", "l2_gemm_gelu_scale", "l2_gemm_sigmoid_sum", "l2_gemm_swish_residual",
        "l2_gemm_leakyrelu_multiply", "l2_gemm_tanh_clamp", "l2_gemm_mish_add", "l2_gemm_layernorm",
        "l2_gemm_softmax", "l2_gemm_max_subtract_gelu", "l2_gemm_logsumexp_relu",
    ]},
    "l2_gemm_groupnorm_relu": {"odd": {**GEMM_ODD, "num_groups": 5},
                               "tiny": {**GEMM_TINY, "out_features": 6, "num_groups": 2}},
    "l2_matmul_scale_residual": {"odd": {"m": 37, "k": 50, "n": 45}, "tiny": {"m": 1, "k": 3, "n": 2}},
    "l2_bmm_relu": {"odd": {"batch_size": 3, "m": 19, "k": 45, "n": 37},
                    "tiny": {"batch_size": 1, "m": 1, "k": 2, "n": 3}},
    **{name: {"odd": CONV_ODD, "tiny": CONV_TINY} for name in [
        "l2_conv_relu_bias", "l2_conv_gelu_mean", "l2_conv_tanh_scale", "l2_conv_hardswish_sub",
    ]},
    "l2_conv_sigmoid_sum": {"odd": {**CONV_ODD, "out_channels": 37}, "tiny": CONV_TINY},
    "l2_conv_maxpool_relu": {"odd": {**CONV_ODD, "kernel_size": 3, "pool_kernel_size": 3},
                             "tiny": {**CONV_TINY, "width": 6, "kernel_size": 2}},
    "l2_conv_groupnorm_relu": {"odd": {**CONV_ODD, "out_channels": 20, "num_groups": 4, "height": 23, "width": 19},
                               "tiny": {**CONV_TINY, "out_channels": 4, "num_groups": 2}},
    "l2_conv_1d_relu_max": {"odd": {"batch_size": 3, "in_channels": 7, "out_channels": 33, "length": 77},
                            "tiny": {"batch_size": 1, "in_channels": 1, "out_channels": 2, "length": 4,
                                     "kernel_size": 3}},
}
CASES = [(name, variant) for name, variants in OVERRIDES.items() for variant in variants]


def with_constants(source: str, constants: dict[str, int]) -> str:
    """The task source with each named module-level constant's value replaced."""
    for name, value in constants.items():
        source, count = re.subn(rf"^{name} = .*$", f"{name} = {value!r}", source, flags=re.MULTILINE)
        assert count == 1, f"task has no module-level constant {name!r}"
    return source


def test_every_gemm_and_conv_task_is_covered():
    names = {p.stem for p in (BUNDLED / "level2").glob("l2_*.py")
             if p.stem.startswith(("l2_gemm_", "l2_matmul_", "l2_bmm_", "l2_conv_"))}
    assert names == set(OVERRIDES)


@pytest.mark.parametrize("name,variant", CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_solution_matches_on_other_shapes(name, variant):
    task = with_constants((BUNDLED / "level2" / f"{name}.py").read_text(), OVERRIDES[name][variant])
    solution = (BUNDLED / "solutions" / f"{name}.py").read_text()
    check_solution(task, solution, seeds=(0,))
