"""Evaluation metrics: pure functions from verified samples to numbers (no torch, no I/O).

A *sample* is one verified completion for one task (``Sample``: task name, level, ``VerifyResult``).
Every rate is a share of ALL samples, in [0, 1], so a format failure counts against every later stage:

    format_rate   = #(code extracted)               / n_samples
    valid_rate    = #(extracted and passed static)  / n_samples
    compiled_rate = #(imported and constructed)     / n_samples
    tiny_rate     = #(right on the tiny shapes)     / n_samples
    correct_rate  = #(right on every full trial)    / n_samples

pass@k (Chen et al. 2021, unbiased): per task with n samples of which c are correct,
``pass@k = 1 - C(n-c, k) / C(n, k)``, computed as ``1 - prod_{i=n-c+1..n} (1 - k/i)`` (no huge binomials);
the suite's pass@k is the mean over tasks. Undefined (None) when some task has fewer than k samples.

fast_p (KernelBench): the share of TASKS whose sample is correct AND has speedup > p. With several samples per
task we report **fast_p@1**: per task, the share of its samples that are correct and faster than p, averaged
over tasks, i.e. the expected fast_p of one random sample per task (the number KernelBench's single-sample
protocol measures). fast_0 is therefore the correct rate averaged per task. For p > 0, fast_p is None
("unavailable") when no sample was timed (CPU): a missing runtime is never reported as 0. When timing is
available, a correct sample without a speedup (timing failed) or whose speedup was flagged suspicious counts
as not faster than p, the conservative choice.

Geometric-mean speedup: ``exp(mean(log(speedup)))`` over correct, timed, unflagged samples; None if none.

Refinement turns (``tritonrl eval --turns N``): a *trajectory* is one (task, sample index), its attempts have
turns 1, 2, ...; a trajectory that stopped early (correct) keeps its state for the later turns. At turn t:

    correct@t   = share of trajectories with a correct attempt at turn <= t
    fast_p@t    = per task, the share of its trajectories whose best trusted speedup at turns <= t is > p,
                  averaged over tasks (fast_0@t: correct@t averaged per task); None for p > 0 without timing
    speedup@t   = geometric mean, over trajectories with a correct timed attempt at turns <= t, of their best
                  speedup; None when there is none (CPU)

A verifier error (flag ``verifier_error``: the verifier itself failed, a bug, a crash, a full disk) is no verdict
on the kernel: such samples are left out of every number above and counted apart (``judged`` splits them off;
``tritonrl eval --resume`` judges them again). A declined sample (``VerifyResult.declined``, flag ``declined``: the
task cannot be judged on this device within its budget, decided from the task alone) is neither correct nor wrong:
left out of every number above too, and counted and named apart (``n_declined``, ``declined`` in the report). So a
CPU run's correct rate is over the samples it could judge; the report says how many it could not, and why.

Failures are counted by category: the stage that failed, except a CPU timeout at sizes over the CPU budget that
could not be reduced (flag ``cpu_size_limit``), which is the machine's limit and has its own category. Flags
that only inform (``timing_unavailable``, ``reduced_shapes``) are not counted as failures; ``n_reduced_shapes``
says how many samples were judged at shapes reduced for the CPU.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tritonrl.verify.shared.flags import Flag
from tritonrl.verify.shared.verdict import Stage, VerifyResult

FAST_P_THRESHOLDS = (0.0, 1.0, 1.5, 2.0)
INFORMATIONAL_FLAGS = (Flag.TIMING_UNAVAILABLE.value, Flag.REDUCED_SHAPES.value)
RATE_NAMES = ("format", "valid", "compiled", "tiny", "correct")


@dataclass(frozen=True)
class Sample:
    """One verified completion: which task (and its level), which sample index, and the verdict."""

    task: str
    level: int
    result: VerifyResult
    index: int = 0
    turn: int = 1  # refinement turn (1: the first attempt); a trajectory is one (task, index)


# ---------------------------------------------------------------- per-sample predicates
def reached(result: VerifyResult, rate: str) -> bool:
    """Whether a sample passed the stage behind ``rate`` (one of ``RATE_NAMES``)."""
    if rate == "format":
        return result.format_ok
    if rate == "valid":
        return result.valid
    if rate == "compiled":
        return result.compiled
    if rate == "tiny":
        # With staging off there is no tiny stage; a fully correct sample has passed it implicitly.
        return result.tiny_correct or result.correct
    if rate == "correct":
        return result.correct
    raise ValueError(f"unknown rate {rate!r}; choose one of {RATE_NAMES}")


def trusted_speedup(result: VerifyResult) -> float | None:
    """The speedup of a correct sample, unless untimed or flagged suspicious (then None)."""
    if not result.correct or result.speedup is None:
        return None
    if Flag.SUSPICIOUS_SPEEDUP.value in result.flags:
        return None
    return result.speedup


def timing_available(samples: Iterable[Sample]) -> bool:
    """True when at least one sample carries a measured runtime (a GPU run); False on CPU."""
    return any(s.result.speedup is not None or s.result.runtime_ms is not None for s in samples)


def is_verifier_error(result: VerifyResult) -> bool:
    """The verifier failed, not the kernel: no verdict at all (``Flag.VERIFIER_ERROR``)."""
    return Flag.VERIFIER_ERROR.value in result.flags


def is_declined(result: VerifyResult) -> bool:
    """The task could not be judged on this device (``VerifyResult.declined``): neither correct nor wrong."""
    return result.declined is not None or Flag.DECLINED.value in result.flags


def judged(samples: Iterable[Sample]) -> list[Sample]:
    """The samples that got a verdict: every metric is computed over these (verifier errors and declined samples
    are counted apart)."""
    return [s for s in samples if not is_verifier_error(s.result) and not is_declined(s.result)]


# ---------------------------------------------------------------- rates
def rate(samples: list[Sample], name: str) -> float | None:
    """Share of all samples that passed stage ``name``; None for an empty list."""
    if not samples:
        return None
    return sum(reached(s.result, name) for s in samples) / len(samples)


def rates(samples: list[Sample]) -> dict[str, float | None]:
    """``{"format_rate": ..., "valid_rate": ..., ..., "correct_rate": ...}``."""
    return {f"{name}_rate": rate(samples, name) for name in RATE_NAMES}


# ---------------------------------------------------------------- pass@k
def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: ``1 - C(n-c, k) / C(n, k)`` in its stable product form."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0  # every k-subset contains a correct sample
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def group_by_task(samples: Iterable[Sample]) -> dict[str, list[Sample]]:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.task].append(s)
    return dict(groups)


def suite_pass_at_k(samples: list[Sample], k: int) -> float | None:
    """Mean pass@k over tasks; None when there are no tasks or some task has fewer than k samples."""
    groups = group_by_task(samples)
    if not groups or any(len(g) < k for g in groups.values()):
        return None
    scores = [pass_at_k(len(g), sum(bool(s.result.correct) for s in g), k) for g in groups.values()]
    return sum(scores) / len(scores)


def pass_at_ks(samples: list[Sample], ks: Iterable[int]) -> dict[str, float | None]:
    """``{"pass@1": ..., "pass@k": ...}`` for each k asked for."""
    return {f"pass@{k}": suite_pass_at_k(samples, k) for k in sorted(set(ks))}


# ---------------------------------------------------------------- fast_p and speedups
def fast_p(samples: list[Sample], p: float, timed: bool | None = None) -> float | None:
    """fast_p@1 averaged per task (see the module docstring); None for p > 0 without timing.

    ``timed`` says whether runtimes were measured; by default it is inferred from the samples.
    """
    groups = group_by_task(samples)
    if not groups:
        return None
    if timed is None:
        timed = timing_available(samples)
    if p > 0 and not timed:
        return None

    def fast(result: VerifyResult) -> bool:
        if p == 0:
            return result.correct
        speedup = trusted_speedup(result)
        return speedup is not None and speedup > p

    per_task = [sum(fast(s.result) for s in g) / len(g) for g in groups.values()]
    return sum(per_task) / len(per_task)


def fast_ps(samples: list[Sample], thresholds: Iterable[float] = FAST_P_THRESHOLDS,
            timed: bool | None = None) -> dict[str, float | None]:
    """``{"fast_0": ..., "fast_1": ..., "fast_1.5": ..., "fast_2": ...}``."""
    return {f"fast_{p:g}": fast_p(samples, p, timed) for p in thresholds}


def speedups(samples: Iterable[Sample]) -> list[float]:
    """Trusted speedups of correct, timed samples."""
    return [v for s in samples if (v := trusted_speedup(s.result)) is not None]


def geomean_speedup(samples: Iterable[Sample]) -> float | None:
    """Geometric mean of trusted speedups; None when no correct sample was timed."""
    values = [v for v in speedups(samples) if v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


# ---------------------------------------------------------------- failures and breakdowns
def is_failure(result: VerifyResult) -> bool:
    """Stopped before ``done``; a timing stage skipped for want of a GPU is not a failure."""
    if result.stage == Stage.DONE:
        return False
    return not (result.stage == Stage.TIMING and Flag.TIMING_UNAVAILABLE.value in result.flags)


def failure_category(result: VerifyResult) -> str:
    """The failed stage's name, or ``cpu_size_limit`` for a CPU timeout at sizes the CPU could not run."""
    return Flag.CPU_SIZE_LIMIT.value if Flag.CPU_SIZE_LIMIT.value in result.flags else result.stage.value


def failure_breakdown(samples: list[Sample]) -> dict[str, dict[str, int]]:
    """Counts of failed samples by category (``failure_category``), and of all samples by flag.

    Informational flags (``INFORMATIONAL_FLAGS``: facts of the machine, not failures) are left out of the flag counts.
    """
    by_stage = Counter(failure_category(s.result) for s in samples if is_failure(s.result))
    by_flag = Counter(f for s in samples for f in s.result.flags if f not in INFORMATIONAL_FLAGS)
    return {"by_stage": dict(by_stage.most_common()), "by_flag": dict(by_flag.most_common())}


def stage_funnel(samples: list[Sample]) -> dict[str, int]:
    """How many samples got through each stage, in funnel order (for the funnel plot)."""
    funnel = {"samples": len(samples)}
    for name in RATE_NAMES:
        funnel[name] = sum(reached(s.result, name) for s in samples)
    return funnel


def summarize(samples: list[Sample], ks: Iterable[int] = (1,), timed: bool | None = None) -> dict[str, Any]:
    """The headline numbers of one set of samples: rates, pass@k, fast_p, speedups, counts."""
    if timed is None:
        timed = timing_available(samples)
    found = speedups(samples)
    return {
        "n_samples": len(samples),
        "n_tasks": len(group_by_task(samples)),
        **rates(samples),
        "pass_at_k": pass_at_ks(samples, ks),
        "fast_p": fast_ps(samples, timed=timed),
        "timing_available": timed,
        "geomean_speedup": geomean_speedup(samples),
        "n_timed_correct": len(found),
        "n_reduced_shapes": sum(Flag.REDUCED_SHAPES.value in s.result.flags for s in samples),
        "n_cpu_size_limit": sum(Flag.CPU_SIZE_LIMIT.value in s.result.flags for s in samples),
    }


def per_level(samples: list[Sample], ks: Iterable[int] = (1,), timed: bool | None = None) -> dict[str, Any]:
    """``summarize`` for each level, keyed ``"1"``, ``"2"``, ... (string keys survive JSON)."""
    levels: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        levels[s.level].append(s)
    return {str(lv): summarize(group, ks, timed) for lv, group in sorted(levels.items())}


def per_task(samples: list[Sample], ks: Iterable[int] = (1,), timed: bool | None = None) -> dict[str, Any]:
    """Per task: level, counts per stage, pass@k, best trusted speedup, and the most common failure."""
    out: dict[str, Any] = {}
    for name, group in sorted(group_by_task(samples).items()):
        best = speedups(group)
        failures = Counter(failure_category(s.result) for s in group if not s.result.correct)
        out[name] = {
            "level": group[0].level,
            "n": len(group),
            **{f"n_{r}": sum(reached(s.result, r) for s in group) for r in RATE_NAMES},
            "pass_at_k": pass_at_ks(group, ks),
            "best_speedup": max(best) if best else None,
            "top_failure": failures.most_common(1)[0][0] if failures else None,
        }
    return out


# ---------------------------------------------------------------- refinement turns
def first_attempts(samples: list[Sample]) -> list[Sample]:
    """The turn-1 attempts: what a single-turn evaluation of the same samples would have judged."""
    return [s for s in samples if s.turn == 1]


def per_turn(samples: list[Sample], timed: bool | None = None, n_turns: int | None = None) -> list[dict[str, Any]]:
    """For each turn t = 1..T: attempts judged at t, correct@t, fast_p@t and speedup@t (module docstring).

    T is ``n_turns`` (the run's setting) or at least the last turn judged: when every trajectory stopped
    early, the later turns have no attempts and the same numbers."""
    if timed is None:
        timed = timing_available(samples)
    trajectories: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    for s in samples:
        trajectories[(s.task, s.index)].append(s)
    out = []
    last = max((s.turn for s in samples), default=0)
    for t in range(1, max(last, n_turns or 0) + 1 if samples else 1):
        correct, best = {}, {}
        for key, attempts in trajectories.items():
            so_far = [s for s in attempts if s.turn <= t]
            correct[key] = any(s.result.correct for s in so_far)
            found = speedups(so_far)
            best[key] = max(found) if found else None
        found_best = [b for b in best.values() if b is not None and b > 0]
        out.append({
            "turn": t,
            "attempts": sum(s.turn == t for s in samples),
            "correct": sum(correct.values()) / len(correct),
            "fast_p": {f"fast_{p:g}": _fast_at_turn(correct, best, p, timed) for p in FAST_P_THRESHOLDS},
            "speedup": math.exp(sum(map(math.log, found_best)) / len(found_best)) if found_best else None,
        })
    return out


def _fast_at_turn(correct: dict, best: dict, p: float, timed: bool) -> float | None:
    if p > 0 and not timed:
        return None
    tasks: dict[str, list[bool]] = defaultdict(list)
    for key in correct:
        tasks[key[0]].append(correct[key] if p == 0 else best[key] is not None and best[key] > p)
    return sum(sum(v) / len(v) for v in tasks.values()) / len(tasks)
