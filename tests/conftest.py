"""Test defaults: CPU-only, Triton's interpreter on, GPU tests skipped unless a GPU is present."""

import os

# Must be set before triton is imported anywhere in the test process.
if not os.environ.get("TRITONRL_TEST_CUDA"):
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

try:
    from hypothesis import settings
except ImportError:  # the dev extra is not installed: only the property-based tests need it
    settings = None

if settings is not None:
    # "ci" (chosen when $CI is set): the same examples every run, so a red CI run is reproducible; locally
    # "dev" keeps exploring new examples. HYPOTHESIS_PROFILE=ci picks it by hand.
    settings.register_profile("ci", derandomize=True, print_blob=True)
    settings.register_profile("dev", print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


# The full suite's own modules: `make test` (the quick suite) skips them, `make test-full` runs them, and so does CI.
# Chosen by their time on two cores (each from about 15 s to two minutes): training end to end, launches of
# several processes, the README's commands, passes over every bundled solution, whole evaluations, interrupts of a
# running job. Every integrity and red-team fixture stays in the quick suite too.
FULL_SUITE_ONLY = {
    "tests/test_readme.py", "tests/test_eval_interrupt.py", "tests/test_eval_solutions_repeated.py",
    "tests/test_multiturn_eval.py", "tests/test_multiturn_grpo.py", "tests/test_golden.py",
    "tests/test_kernelbench_bench.py", "tests/test_serve_load_bench.py",
    "tests/train/test_training.py", "tests/train/test_ranks.py", "tests/train/test_weights_move.py",
    "tests/train/test_fast_generation.py", "tests/train/test_reward_overlap.py", "tests/train/test_step_rewards.py",
    "tests/tasks/test_bundled_solutions.py", "tests/tasks/test_bundled_shapes.py",
    "tests/tasks/test_bundled_gemm_conv_shapes.py", "tests/taskgen/test_taskgen.py",
    "tests/common/test_generation.py", "tests/verify/test_cli_stream.py", "tests/verify/test_ray_backend.py",
    "tests/serve/test_verdicts.py",
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marker must be there when it looks
def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in FULL_SUITE_ONLY:
            item.add_marker(pytest.mark.full)
    _skip_gpu_tests_without_a_gpu(items)


def _skip_gpu_tests_without_a_gpu(items):
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def pytest_configure(config):
    from tritonrl.cli import known_warnings

    known_warnings.install()  # the harmless library warnings the command silences, silent in the tests too
