"""Before a run rewards or scores anything: the verifier, on this machine's stack, accepts kernels known to be right.

A verifier that works here and fails on another Triton rejects every honest kernel of some kind there, silently: a
training run then learns from a broken reward and an evaluation reports a low rate, both looking like results.
It happened twice on the GPU machines' Triton 3.6 (the CPU here has 3.9): its builder passed two more arguments to
a hooked load (every load raised; 0 of 128 references accepted), and its front end read a hook's signature, which
the audit refused (every ``tl.sum`` rejected: study two's third hold trained an arm on that reward). So RL and
evaluation first judge a few bundled reference kernels, one of each kind of construct (elementwise, reductions, a
GEMM, fusions) with the run's own verifier, and stop in one line if any is rejected (``verify.known_good``).
"""

from __future__ import annotations

from typing import Any

from tritonrl.errors import UserError

# one of each construct a kernel is made of: elementwise, tl.sum, tl.max, exp and a row reduction, mean/var,
# tl.dot, a permuted store, a GEMM with its epilogue, an elementwise fusion
KNOWN_GOOD = ("l1_relu", "l1_sum_dim", "l1_max_dim", "l1_softmax", "l1_layernorm", "l1_matmul", "l1_transpose",
              "l2_gemm_bias_relu", "l2_bias_gelu_scale")


class VerifierBroken(UserError):
    """The verifier rejects known-good kernels on this machine: whatever it would reward or score is wrong."""


def known_good_failures(verifier: Any, names: tuple[str, ...] = KNOWN_GOOD) -> list[tuple[str, Any]]:
    """``(task, verdict)`` of each bundled reference in ``names`` that ``verifier`` does not judge correct."""
    from tritonrl.tasks.sources import load_bundled
    from tritonrl.verify.parent.verifier import VerifyItem

    tasks = {t.name: t for t in load_bundled()}
    missing = [n for n in names if n not in tasks or not tasks[n].solution]
    if missing:
        raise ValueError(f"no bundled reference for {missing}")
    results = verifier.verify_many([VerifyItem(tasks[n], code=tasks[n].solution) for n in names])
    return [(n, r) for n, r in zip(names, results) if not r.correct]


_PASSED: set[tuple] = set()  # the kinds of verifier that passed in this process: judged once, not per run


def check_known_good(verifier: Any, what: str) -> None:
    """Raise ``VerifierBroken`` (one line: the first rejected kernel, why, and this machine's torch and Triton) if
    ``verifier`` rejects any of the known-good kernels. A kind of verifier that passed once in this process (its
    class, device and the settings that decide correctness) is not judged again: the stack does not change."""
    config = getattr(verifier, "config", None)
    kind = (type(verifier).__qualname__, getattr(verifier, "device", None),
            *(getattr(config, name, None) for name in ("device", "backend", "strict", "static_checks")))
    if kind in _PASSED:
        return
    failed = known_good_failures(verifier)
    if not failed:
        _PASSED.add(kind)
        return
    import torch
    import triton

    name, verdict = failed[0]
    error = " ".join(str(verdict.error or "").split())[:300]
    raise VerifierBroken(
        f"{what}: the verifier rejects {len(failed)} of {len(KNOWN_GOOD)} known-good kernels on this machine (torch "
        f"{torch.__version__}, triton {triton.__version__}), so its verdicts would be wrong; first {name}: "
        f"{getattr(verdict.stage, 'value', verdict.stage)} {','.join(verdict.flags)}: {error} "
        f"(verify.known_good: false runs anyway)")


def wanted(config: Any) -> bool:
    """Whether a verifier made from ``config`` (a ``VerifyConfig``) is checked: ``known_good`` asks for it, and it
    is no client of ``tritonrl serve`` (``backend: http``: the service checked its own before it listened)."""
    return bool(getattr(config, "known_good", False)) and getattr(config, "backend", "local") != "http"


def checked(verifier: Any, config: Any, what: str) -> Any:
    """``verifier``, made by the caller from ``config``, once ``check_known_good`` passed where ``wanted``; closed if
    it failed."""
    if wanted(config):
        try:
            check_known_good(verifier, what)
        except BaseException:
            verifier.close()
            raise
    return verifier
