"""A plain in-process check of a solution against its task, for the bundled suite's own tests.

Not the verifier (no sandbox, no anti-cheat): it answers one question, "does this hand-written reference
solution compute what the task computes?", on a few seeds, so the suite can be trusted as ground truth.
"""

from __future__ import annotations

import types

import torch


def load_module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def check_solution(task_source: str, solution_source: str, seeds=(0, 1, 2), atol=1e-4, rtol=1e-4,
                   device: str = "cpu") -> None:
    """Raise AssertionError unless ModelNew matches Model on fresh inputs for every seed."""
    task = load_module(task_source, "task")
    sol = load_module(solution_source, "solution")
    for seed in seeds:
        torch.manual_seed(seed)
        init = task.get_init_inputs()
        torch.manual_seed(seed)
        ref_model = task.Model(*init).to(device)
        torch.manual_seed(seed)
        new_model = sol.ModelNew(*init).to(device)
        torch.manual_seed(seed + 1000)
        inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        with torch.no_grad():
            expected = ref_model(*inputs)
            actual = new_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        actual = actual if isinstance(actual, (tuple, list)) else (actual,)
        assert len(expected) == len(actual), "different number of outputs"
        for e, a in zip(expected, actual):
            assert e.shape == a.shape, f"seed {seed}: shape {tuple(a.shape)} != {tuple(e.shape)}"
            assert e.dtype == a.dtype, f"seed {seed}: dtype {a.dtype} != {e.dtype}"
            err = (e - a).abs().max().item()
            assert torch.allclose(e, a, atol=atol, rtol=rtol), f"seed {seed}: max abs error {err:.3g}"
