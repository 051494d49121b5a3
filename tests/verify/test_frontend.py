"""The GPU front-end check (``child/frontend.py``) fails closed, and its verdict is kept only while nothing the
kernel reads has changed (its reach)."""

import types

from tritonrl.verify.child import frontend


def test_a_launch_the_front_end_cannot_be_shown_is_refused():
    def not_a_kernel():  # no source Triton can bind as a kernel here: the machinery fails
        return 0

    problem = frontend.frontend_problem(not_a_kernel, (), {})
    assert problem is not None and "could not be shown" in problem


def _reader(scope: dict) -> types.FunctionType:
    source = "def kernel(x):\n    return helper(x) + mod.scale\n"
    namespace: dict = {}
    exec(compile(source, "<kernel>", "exec"), scope, namespace)  # noqa: S102 - a test's own code
    return types.FunctionType(namespace["kernel"].__code__, scope, "kernel")


def test_the_reach_changes_with_a_rebound_helper_or_module_attribute():
    mod = types.ModuleType("mod")
    mod.scale = 1.0
    scope = {"helper": abs, "mod": mod}
    kernel = _reader(scope)
    first = frontend.kernel_reach(kernel)
    assert frontend.kernel_reach(kernel) == first
    scope["helper"] = round
    second = frontend.kernel_reach(kernel)
    assert second != first
    mod.scale = 2.0
    third = frontend.kernel_reach(kernel)
    assert third != second
    scope["unrelated"] = 1  # a global the kernel does not name changes nothing
    mod.other = 3
    assert frontend.kernel_reach(kernel) == third
