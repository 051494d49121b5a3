"""The monitor's hooks seen from outside: Triton and ``inspect`` read a hook's signature as its original's, without
the refused reads of the hook's own ``__code__`` and ``__kwdefaults__`` (they hold the monitor).

Triton 3.6 (the GPU machines' stack) asks ``inspect.signature(fn.__call__)`` of every ``constexpr_function`` it
compiles a call to (``tl.sum``'s ``_pick_sum_dtype``); the audit hook refused it, so every kernel with a ``tl.sum``
failed to compile on a GPU and in the CPU's front-end check there (study two's third hold judged a third of the
honest kernels wrong). Triton 3.9 does not ask, so this checks the reads themselves, in a child process: an audit
hook cannot be taken out of the process that added it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    import inspect, json
    from triton.language import standard
    from triton.runtime.jit import ConstexprFunction
    from tritonrl.verify.child import audit
    from tritonrl.verify.child.monitor import Monitor

    before = str(inspect.signature(ConstexprFunction.__call__))
    monitor = Monitor(candidate_file="/nonexistent/candidate.py")
    monitor.install()
    audit.install("/nonexistent/candidate.py")
    out = {"before": before, "after": str(inspect.signature(ConstexprFunction.__call__)),
           "bound": list(inspect.signature(standard._pick_sum_dtype.__call__).parameters)}
    try:
        ConstexprFunction.__call__.__kwdefaults__
        out["kwdefaults"] = "read"
    except Exception as exc:
        out["kwdefaults"] = type(exc).__name__
    mismatched = []
    for owner, name, hook in monitor._wrappers:
        if not callable(hook) or isinstance(hook, property) or getattr(hook, "__signature__", None) is None:
            continue  # not a function, or an original without a signature (a C method): nothing to answer
        if "_tritonrl" in str(inspect.signature(hook)):
            mismatched.append(f"{getattr(owner, '__name__', owner)}.{name}")
    out["mismatched"] = mismatched
    print(json.dumps(out))
""")


def _probe() -> dict:
    import json

    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_hooks_answer_inspect_signature_as_their_originals_under_the_audit():
    found = _probe()
    assert found["after"] == found["before"], found  # no AuditRefusal, and Triton 3.6 sees ``_semantic``
    assert "_semantic" in found["bound"], found
    assert found["mismatched"] == [], found  # no hook shows its keyword-only default holding the monitor
    assert found["kwdefaults"] == "AuditRefusal", found  # the monitor itself is still out of reach
