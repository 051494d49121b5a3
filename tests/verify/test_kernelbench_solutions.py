"""Real KernelBench problems on the CPU: honest kernels judged correct at reduced shapes, wrong ones rejected.

    KERNELBENCH_DIR=~/KernelBench pytest -m slow tests/verify/test_kernelbench_solutions.py

The solutions are ours (tests/fixtures/kernelbench_solutions/: ``level2_N.py`` honest, ``level2_N_wrong.py``
wrong); the problems come from the clone and are never copied into this repository.
"""

import os
from pathlib import Path

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.tasks import load_tasks
from tritonrl.tasks.sources import match_problem
from tritonrl.verify import Flag, Verifier

SOLUTIONS = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_solutions"
PROBLEMS = (12, 56, 63, 76)
CPU_LIMIT_S = 60.0

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.environ.get("KERNELBENCH_DIR"), reason="set KERNELBENCH_DIR to a clone")]


@pytest.fixture(scope="module")
def kb_verifier():
    with Verifier(VerifyConfig(device="cpu", timeout_s=CPU_LIMIT_S)) as verifier:
        yield verifier


@pytest.mark.parametrize("number", PROBLEMS)
def test_honest_kernel_is_correct_at_reduced_shapes_and_wrong_one_rejected(kb_verifier, number):
    task = match_problem(str(number), load_tasks(os.environ["KERNELBENCH_DIR"], level=2))
    good = kb_verifier.verify(task, code=(SOLUTIONS / f"level2_{number}.py").read_text())
    assert good.correct, good.error
    assert Flag.REDUCED_SHAPES.value in good.flags
    assert good.elapsed_s < CPU_LIMIT_S
    wrong = kb_verifier.verify(task, code=(SOLUTIONS / f"level2_{number}_wrong.py").read_text())
    assert not wrong.correct and wrong.stage.value in ("tiny", "full"), wrong
