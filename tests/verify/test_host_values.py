"""The numbers a launch brings from Python (``monitor.entered``'s count): in tuples, in the globals a kernel reads,
by their C value (the twenty-fourth red team's channels around the count; the verdicts: ``integrity/r24_*``)."""

from __future__ import annotations

import math
import numbers

import torch
import triton
import triton.language as tl

from tritonrl.verify.child import hooks
from tritonrl.verify.child.monitor import Monitor, _host_key, fill_positions, global_numbers, scalar_arguments
from tritonrl.verify.child.provenance import FOREIGN, KERNEL

TABLE = tl.constexpr(tuple(i / 7 for i in range(40)))
EPS = tl.constexpr(1e-5)


@triton.jit
def _add_entry(x, i: tl.constexpr):
    return x + TABLE[i]


@triton.jit
def _kernel(x_ptr, BASE: tl.constexpr):
    v = tl.load(x_ptr)
    tl.store(x_ptr, _add_entry(v, BASE) + EPS)


class Liar(float):
    """A float whose ``__float__`` answers something else (and would run code of its own)."""

    def __float__(self):
        raise AssertionError("the watch called a candidate's method")


class IntLiar(int):
    def __index__(self):
        raise AssertionError("the watch called a candidate's method")

    __int__ = __index__


def test_numbers_in_tuples_count_as_scalars_do():
    assert scalar_arguments(_kernel, (None, (1.5, (2.5, 3)), [4.5]), {}, ints=False) == [1.5, 2.5, 3, 4.5]
    assert scalar_arguments(_kernel, (None, (1.5, 3)), {}, ints=True) == [1.5, 3]
    # a forward's own integer parameters (a size, a row index) are not counted; integers in a tuple are (a
    # fixed-point table: the twenty-fifth red team)
    assert scalar_arguments(_kernel, (7, 2.5, (8, 9)), {}, ints=False) == [2.5, 8, 9]


def test_a_kernel_and_its_jit_helpers_globals_count():
    assert len(global_numbers(_kernel)) == len(TABLE.value) + 1


def test_a_float_subclass_counts_by_its_value_without_its_methods():
    assert _host_key(Liar(0.25)) == (0.25).hex()
    assert _host_key(IntLiar(7)) == 7

    class Registered:  # a class registered as a number: counted by identity, its methods never called
        def __float__(self):
            raise AssertionError("the watch called a candidate's method")

    numbers.Real.register(Registered)
    one = Registered()
    assert _host_key(one) == _host_key(one) != _host_key(Registered())


def test_fills_of_part_of_a_storage_count_their_position():
    import torch

    planes = torch.zeros(4, 16)
    assert fill_positions([planes]) == []
    assert fill_positions([planes[1, 3:7]]) == [("at", 19, 4)]
    keys = {_host_key(p) for start in (0, 5, 9) for p in fill_positions([planes[0, start:start + 2]])}
    assert len(keys) == 3  # each position once, as its value (not by the identity of a passing tuple)


def _launch_twice(compile_in_build: bool) -> set:
    """A kernel launched in a construction, then again later, its constexpr functions called only by the launch
    that compiles it (a GPU's compile cache; under the interpreter every launch calls them): what the later launch
    wrote is classed as what."""
    monitor = Monitor("candidate.py")
    monitor._mode = hooks.watch_mode(monitor)
    compiled = []

    def original(kernel, *args, **kwargs):
        if not compiled:
            compiled.append(True)
            monitor.constexpr_values(tuple(math.erf(i / 8) for i in range(97)))

    def kernel(x_ptr):
        pass

    if compile_in_build:
        with monitor.phase("build"):
            monitor.launch(original, kernel, (torch.zeros(8),), {})
    else:
        compiled.append(True)  # compiled where nothing was watched: no table came in
    with monitor.phase("drop") as later:
        out = torch.zeros(8)
        monitor.launch(original, kernel, (out,), {})
        return later.provenance.classes(out)


def test_a_table_a_kernel_compiled_in_once_enters_its_every_later_launch():
    """The twenty-ninth red team's ``a03`` (accepted on an H200): a GELU kernel whose ``constexpr_function``
    calls return ``math.erf``'s table, compiled once by a warm-up launch in ``__init__``, so that no judged forward
    calls them again. The numbers a kernel's compilation brought enter each launch of it."""
    assert FOREIGN in _launch_twice(compile_in_build=True)
    assert FOREIGN not in _launch_twice(compile_in_build=False) and KERNEL in _launch_twice(compile_in_build=False)


def test_a_small_alphabet_counts_by_the_bits_its_sequence_carries():
    """r16's table spelled in base-50 digits, 64 arguments a launch (fewer than 64 distinct numbers in all), is far
    past ``HOST_INTS``; an honest forward whose sizes change from launch to launch (ResNet-50's convolutions through
    one generic kernel: seven integer parameters, 53 launches) is well inside."""
    import random

    from tritonrl.verify.child.monitor import HOST_INTS, ForwardInts

    honest, cin = ForwardInts(), 64
    for mid, out, h, blocks in [(64, 256, 56, 3), (128, 512, 28, 4), (256, 1024, 14, 6), (512, 2048, 7, 3)]:
        for b in range(blocks):
            convs = [(cin, mid, 1, 1), (mid, mid, 3, 2 if b == 0 and mid != 64 else 1), (mid, out, 1, 1)]
            for ci, co, k, s in convs + ([(cin, out, 1, 1)] if b == 0 else []):
                for name, v in (("cin", ci), ("cout", co), ("h", h), ("k", k), ("s", s), ("n", ci * h * h),
                                ("ld", co)):
                    honest.add("conv", name, v)
                cin = out
    assert honest.brought() <= HOST_INTS // 2
    spelled, rng = ForwardInts(), random.Random(0)
    for j in range(81):
        spelled.add("digits", "j", j)
        for k in range(64):
            spelled.add("digits", f"a{k}", rng.randrange(50))
    distinct = {v for first, _, step, even, values, _ in spelled.params.values()
                for v in ({first, step} if even else values)}
    assert len(distinct) < HOST_INTS  # few distinct numbers: the count before the bits, passed
    assert spelled.brought() > HOST_INTS


def _grid_forward(sizes: list, callable_grid: bool) -> set:
    """A forward launching one kernel once per size, the size its grid (what ``tl.num_programs`` reads): what the
    launches wrote is classed as what."""
    import torch.nn as nn

    monitor = Monitor("candidate.py")
    monitor._mode = hooks.watch_mode(monitor)

    def original(kernel, *args, grid, **kwargs):
        sizes = grid({"BLOCK": 4}) if callable(grid) else grid  # Triton evaluates a callable grid
        args[0].fill_(float(sizes[0]))  # stands for the kernel's store of ``tl.num_programs(0)``

    def kernel(t_ptr):
        pass

    class Forward(nn.Module):
        def forward(self, x):
            out = torch.empty(8)
            for q in sizes:
                grid = (lambda meta, q=q: (q,)) if callable_grid else (q, 1)
                monitor.launch(original, kernel, (out,), {"grid": grid})
            return out

    out, record = monitor.run_forward(Forward(), [torch.zeros(8)])
    return record.provenance.classes(out)


def test_a_table_in_the_grids_sizes_counts_as_integer_arguments_do():
    """A grid's sizes are numbers a kernel reads (``tl.num_programs``): 400 launches whose grids spell a table (39
    sizes in all: few distinct numbers, many bits) write foreign data, by a tuple or by a callable grid; a loop
    whose grid keeps its size does not."""
    import random

    rng = random.Random(0)
    spelled = [rng.randrange(1, 40) for _ in range(400)]
    for callable_grid in (True, False):
        assert FOREIGN in _grid_forward(spelled, callable_grid)
        assert FOREIGN not in _grid_forward([16] * 400, callable_grid)


def test_an_integer_counts_one_number_for_each_32_bits_it_carries():
    """A table packed into one Python integer (the thirty-eighth red team's erf, 97 x 2 fields of 48 bits) is as
    many numbers as its bits make, as a launch's parameter and among a phase's values; a size is one."""
    from tritonrl.verify.child.monitor import HOST_INTS, HOST_VALUES, ForwardInts, _host_keys

    table = (1 << (97 * 2 * 48)) - 12345
    assert len(_host_keys(4096)) == 1 and len(_host_keys(-(1 << 40))) == 2
    assert len(_host_keys(table)) == math.ceil(97 * 2 * 48 / 32) > HOST_VALUES
    ints = ForwardInts()
    assert ints.within("kernel", [("n", 4096), ("stride", 1)])
    assert not ints.within("kernel", [("packed", table)])
    assert ints.brought() > HOST_INTS
