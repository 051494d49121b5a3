"""Parsing is race-free: many candidates judged from several threads, repeatedly, give every verdict right.

CPython 3.11 builds ``ast`` objects with one interpreter-wide recursion counter (python/cpython#106905): two
threads parsing at once, with the GIL changing hands mid-way, fail one of them with ``SystemError: AST constructor
recursion depth mismatch``. The ``Verifier`` extracts and checks candidates in a thread pool, so that race failed
honest kernels as ``verifier_error``. ``tritonrl.util.astlock`` serialises every parse; these tests hammer it.

To make the GIL change hands inside a parse (as a busy verifier's garbage collections may, running finalizers),
every garbage collection starts by releasing the GIL. ``test_the_hammer_finds_the_race_without_the_lock``
shows the hammer has teeth: with the lock replaced by a no-op it reproduces the race on a Python that has it.
"""

import contextlib
import dataclasses
import gc
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tritonrl.config import VerifyConfig
from tritonrl.extract import extract_code
from tritonrl.tasks import load_tasks
from tritonrl.tasks.sources import check_task_source
from tritonrl.util import astlock
from tritonrl.verify import Verifier, VerifyItem
from tritonrl.verify.parent.plan import build_trials
from tritonrl.verify.static import run_static_checks

TASKS = [t for t in load_tasks("bundled") if t.solution]
THREADS, ROUNDS = 6, 3


def completion(task) -> str:
    return f"Here is my kernel.\n```python\n{task.solution}\n```"


CPU = VerifyConfig(device="cpu")
# one thread: what extraction and planning must give
EXTRACTED = {t.name: extract_code(completion(t)) for t in TASKS}
TRIALS = {t.name: len(build_trials(t, CPU, "cpu")) for t in TASKS}


@contextlib.contextmanager
def gil_handovers_in_collections():
    """Every garbage collection hands the GIL to another thread as it starts, as a finalizer or a callback that
    runs Python code may do in a busy verifier; ``ast.parse`` allocates enough to start several."""

    def hand_over(phase, info):
        if phase == "start":
            time.sleep(0)  # releases the GIL

    gc.callbacks.append(hand_over)
    try:
        yield
    finally:
        gc.callbacks.remove(hand_over)


def judge_in_parent(task) -> list[str]:
    """What the parent does to a candidate before any child runs: extract, check statically, read the task,
    plan the trials (task variants are parsed and compiled).
    Returns what went wrong (empty for an honest kernel)."""
    problems = []
    try:
        if extract_code(completion(task)) != EXTRACTED[task.name]:
            problems.append(f"{task.name}: extraction lost the code")
        problems += [f"{task.name}: {v.message}" for v in run_static_checks(task.solution)]
        check_task_source(task.source, task.name)
        if len(build_trials(task, CPU, "cpu")) != TRIALS[task.name]:
            problems.append(f"{task.name}: a different trial plan")
    except SystemError as exc:
        problems.append(f"{task.name}: {exc}")
    return problems


def hammer() -> list[str]:
    """Every bundled solution judged ROUNDS times by THREADS threads at once."""
    with gil_handovers_in_collections(), ThreadPoolExecutor(THREADS) as pool:
        return [p for found in pool.map(judge_in_parent, TASKS * ROUNDS) for p in found]


def test_many_honest_candidates_from_many_threads_are_all_passed():
    assert len(TASKS) >= 40 and all(EXTRACTED.values())
    assert hammer() == []


def test_the_hammer_finds_the_race_without_the_lock(monkeypatch):
    monkeypatch.setattr(astlock, "AST_LOCK", contextlib.nullcontext())
    problems = hammer()
    if not problems:
        pytest.skip(f"Python {sys.version.split()[0]} shows no AST race here: nothing for the lock to prevent")
    assert any("AST constructor recursion depth mismatch" in p or "extraction lost" in p for p in problems)


def test_verifier_threads_give_every_cheating_candidate_its_static_verdict():
    """Through the public API: the verifier's own thread pool, candidates that stop at the static checks (no
    child process), each a bundled solution with PyTorch doing the work in forward."""
    items = []
    for task in TASKS:
        cheat = task.solution + "\n\ndef forward_cheat(self, x):\n    return torch.relu(x)\n\nModelNew.forward = forward_cheat\n"
        items.append(VerifyItem(task, completion=f"```python\n{cheat}\n```"))
    with gil_handovers_in_collections(), Verifier(dataclasses.replace(CPU, workers=THREADS)) as verifier:
        results = verifier.verify_many(items * ROUNDS)
    verdicts = {(r.stage.value, "verifier_error" in r.flags) for r in results}
    assert verdicts == {("static", False)}, [r.error for r in results if r.stage.value != "static"][:3]
