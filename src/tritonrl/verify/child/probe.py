"""The forward once at the shape a GPU judges, on the meta device: launches checked against a GPU's limits, not run
(candidate child, CPU interpreter only; the judge's ``Session.gpu_shape`` asks for it).

The CPU judges a task at sizes its interpreter can run; a GPU at the task's real ones (a bundled task's timing
shape, a KernelBench task as written). A launch configuration that grows with the input is right at the first and
refused at the second: a grid whose y axis is ``N * C_out * OH`` (387,072 at a convolution's real shape, CUDA
allows 65,535), one block of ``next_power_of_2(numel)`` elements (2^26 at a ReLU's, Triton builds at most 2^20),
a tile whose shared memory outgrows the device. The thirty-fifth red team's ``a04`` and ``a10`` were accepted on the
CPU and would not run on any GPU. So after the trials pass, the forward runs once more on the task's real shape with
every tensor on the meta device (shapes, no values, no memory): each launch that reaches the interpreter's lowest
launch point (``GridExecutor.__call__``) has its grid evaluated and held against CUDA's limits and its kernel put
through the GPU front end at that launch's specialization (``frontend.frontend_problem``: Triton's block-size limit,
shared memory, threads), and returns without running a program. An autotuned kernel launches the config its own
tuning keeps (nothing is timed here: ``interpreter._ranked_bench``).

What it cannot see: a candidate whose code does not run on the meta device (``.item()``, a value read into Python)
is *unchecked*, said in the verdict (``timing["gpu_shape"]``), not failed: the probe can only find what a GPU
refuses, and a forward that tells the meta device apart (``x.is_meta``) can launch differently there. That is one
more way to tell the CPU from a GPU, a class the judge closes elsewhere by making the two agree
(docs/verifier.md, "Budget"); the probe closes the honest mistake, a launch sized for the CPU's shapes.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

GRID_LIMITS = (2**31 - 1, 65535, 65535)  # CUDA's largest grid, x, y and z (every GPU since sm_30)


class GpuLimit(RuntimeError):
    """A launch at the GPU's shape that a GPU refuses (the grid, or the compiler at that specialization)."""


class _State:
    active = False  # while the judge's probe runs: launches are checked, not run
    launches = 0


def active() -> bool:
    return _State.active


def begin() -> None:
    _State.active, _State.launches = True, 0


def end() -> int:
    """The probe over; how many launches it checked."""
    _State.active = False
    return _State.launches


def meta_values(descriptors: list) -> list:
    """The judge's descriptors (``judge.layout``) as values: a slot's tensor on the meta device (its shape and
    dtype), a dtype, a JSON value."""
    from tritonrl.verify.shared.trial import torch_dtype

    values = []
    for d in descriptors:
        if "slot" in d:
            values.append(torch.empty(d["slot"]["shape"], dtype=torch_dtype(d["slot"]["dtype"]), device="meta"))
        elif "dtype" in d:
            values.append(torch_dtype(d["dtype"]))
        else:
            values.append(d.get("value"))
    return values


def check_launch(executor: Any, args: tuple, kwargs: dict) -> None:
    """One launch through ``GridExecutor`` at the GPU's shape: its grid within CUDA's limits, its kernel one the GPU
    front end compiles at this specialization; raises ``GpuLimit`` with the GPU's reason. Runs no program."""
    from tritonrl.verify.child.frontend import NOT_IN_THIS_TRITON, frontend_problem

    fn = executor.fn
    name = getattr(fn, "__name__", "?")
    spec = inspect.getfullargspec(fn)
    kwargs = {k: v for k, v in kwargs.items() if k in spec.args or k in spec.kwonlyargs}
    grid = executor.grid(inspect.getcallargs(fn, *args, **kwargs)) if callable(executor.grid) else executor.grid
    grid = tuple(int(size) for size in grid)
    if len(grid) > 3:
        raise GpuLimit(f"kernel `{name}` is launched on a {len(grid)}-dimensional grid; CUDA's has at most 3")
    for axis, (size, limit) in enumerate(zip(grid, GRID_LIMITS)):
        if size > limit:
            raise GpuLimit(f"kernel `{name}` is launched with {size:,} programs on grid axis {axis} "
                           f"(grid {grid}); CUDA allows at most {limit:,} there, so a GPU refuses the launch")
    problem = frontend_problem(fn, args, kwargs)
    if problem is not None and not problem.startswith(NOT_IN_THIS_TRITON):
        raise GpuLimit(f"kernel `{name}` is rejected by the GPU compiler at this shape: {problem}")
    _State.launches += 1
