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

import pytest

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


def test_a_compiled_kernel_is_launched_only_by_its_watched_launch():
    """On a GPU a launch returns its ``CompiledKernel``, whose launcher (``run``) launched it again below the watch
    (the twenty-ninth red team: 85% of a ReLU on a side stream before the timer started). The hooked ``run`` is
    handed only to Triton's own ``JITFunction.run``; any other caller is refused, and the phase records it."""
    from types import SimpleNamespace

    from triton.compiler.compiler import CompiledKernel

    from tritonrl.verify.child import hooks

    record = SimpleNamespace(escapes=[])
    record.escape = record.escapes.append
    monitor = SimpleNamespace(record=record)
    launcher = object()

    def watched_launch(kernel):  # stands for JITFunction.run: the one caller the launcher is handed to
        return kernel.run

    made = hooks.compiled_launch_hooks(monitor, watched_launch.__code__)
    assert [(owner, name) for owner, name, _ in made] == [(CompiledKernel, "run")]
    original = CompiledKernel.__dict__["run"]
    kernel = CompiledKernel.__new__(CompiledKernel)
    # loaded already, no launch hook: the runner asks no driver (none on a CPU) before it reads ``run``
    kernel.__dict__.update(_run=launcher, module=object(), _module_pid=None, name="k", function=None, hash="h",
                           packed_metadata=None, metadata_group={}, src=None, metadata=None)
    try:
        CompiledKernel.run = made[0][2]
        assert watched_launch(kernel) is launcher
        with pytest.raises(RuntimeError, match="only through its launch"):
            kernel.run  # noqa: B018 - the read is the launch's first step
        with pytest.raises(RuntimeError, match="only through its launch"):
            kernel[(1, 1, 1)](stream=0)  # CompiledKernel.__getitem__'s runner reads run when it is called
    finally:
        CompiledKernel.run = original
    assert len(record.escapes) >= 2 and "below the watched launch" in record.escapes[0]
