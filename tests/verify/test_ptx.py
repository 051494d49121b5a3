"""Inline PTX under the CPU interpreter (``tritonrl.verify.child.ptx``): straight-line 32-bit PTX runs as the PTX ISA
says a GPU runs it; anything else is a construct the interpreter cannot run, never a guess."""

import numpy as np
import pytest

from tritonrl.verify.child.interpreter import InterpreterUnsupported
from tritonrl.verify.child.ptx import run

F32, I32, U32 = np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32)
SUB = np.float32(1e-40)  # a float32 subnormal


def one(asm, *args, constraints=None, out=F32):
    values = [np.asarray(a) for a in args]
    constraints = constraints or ",".join(["=r"] + ["r"] * len(values))
    return run(asm, constraints, values, [out], 1)[0]


def f32(*xs):
    return np.array(xs, dtype=np.float32)


def test_the_red_teams_honest_instructions_compute_what_a_gpu_does():
    x = f32(-2.0, -0.0, 0.5, 3.0)
    assert one("max.f32 $0, $1, 0f00000000;", x).tolist() == [0.0, 0.0, 0.5, 3.0]
    np.testing.assert_allclose(one("ex2.approx.f32 $0, $1;", x), np.exp2(x.astype(np.float64)), rtol=1e-7)
    assert one("mov.b32 $0, $1;", x).tobytes() == x.tobytes()


def test_float_arithmetic_with_modifiers():
    a, b, c = f32(1.5, -2.0, 1e30), f32(2.0, 0.25, 2.0), f32(0.5, 1.0, -1e30)
    assert one("add.f32 $0, $1, $2;", a, b).tolist() == (a + b).tolist()
    assert one("sub.rn.f32 $0, $1, $2;", a, b).tolist() == (a - b).tolist()
    assert one("mul.f32 $0, $1, $2;", a, b).tolist() == (a * b).tolist()
    assert one("fma.rn.f32 $0, $1, $2, $3;", a, b, c)[0] == np.float32(3.5)
    assert one("mul.sat.f32 $0, $1, $2;", a, b).tolist() == [1.0, 0.0, 1.0]  # clamped to [0, 1]
    assert one("neg.f32 $0, $1;", a).tolist() == (-a).tolist()
    np.testing.assert_allclose(one("rcp.approx.f32 $0, $1;", b), 1 / b)
    np.testing.assert_allclose(one("rsqrt.approx.ftz.f32 $0, $1;", b), 1 / np.sqrt(b), rtol=1e-7)
    np.testing.assert_allclose(one("div.full.f32 $0, $1, $2;", a, b), a / b)


def test_ftz_flushes_subnormal_inputs_and_results_to_a_zero_of_their_sign():
    x = f32(SUB, -SUB, 1.0)
    assert one("add.f32 $0, $1, 0f00000000;", x)[0] == SUB  # kept without .ftz
    flushed = one("mul.ftz.f32 $0, $1, 0f3F800000;", x)  # times 1: -0 stays -0 (-0 + 0 is +0)
    assert flushed[0] == 0 and not np.signbit(flushed[0]) and np.signbit(flushed[1])
    assert one("ex2.approx.ftz.f32 $0, $1;", f32(-130.0))[0] == 0  # 2^-130 is subnormal: flushed
    assert one("ex2.approx.f32 $0, $1;", f32(-130.0))[0] > 0
    assert one("sqrt.approx.ftz.f32 $0, $1;", f32(SUB))[0] == 0


def test_min_and_max_return_the_number_beside_a_nan_unless_told_nan():
    a, b = f32(np.nan, 1.0), f32(2.0, np.nan)
    assert one("max.f32 $0, $1, $2;", a, b).tolist() == [2.0, 1.0]
    assert np.isnan(one("max.NaN.f32 $0, $1, $2;", a, b)).all()


def test_integer_bit_and_conversion_instructions():
    i = np.array([-7, 5, 2**31 - 1], dtype=np.int32)
    assert one("add.s32 $0, $1, 1;", i, out=I32).tolist() == [-6, 6, -(2**31)]  # wraps
    assert one("mul.lo.s32 $0, $1, 3;", i, out=I32).tolist()[:2] == [-21, 15]
    assert one("shr.s32 $0, $1, 1;", i, out=I32).tolist()[:2] == [-4, 2]  # arithmetic
    assert one("shr.u32 $0, $1, 28;", i, out=U32).tolist()[0] == 0xF
    assert one("shl.b32 $0, $1, 4;", np.array([1], dtype=np.uint32), out=U32).tolist() == [16]
    assert one("and.b32 $0, $1, 0x7FFFFFFF;", f32(-2.5), out=F32).tolist() == [2.5]  # |x| by its bits
    assert one("cvt.rn.f32.s32 $0, $1;", i).tolist()[:2] == [-7.0, 5.0]
    x = f32(2.5, -2.5, 3e9, np.nan)
    assert one("cvt.rni.s32.f32 $0, $1;", x, out=I32).tolist() == [2, -2, 2**31 - 1, 0]  # even, clamped, NaN 0
    assert one("cvt.rzi.s32.f32 $0, $1;", x, out=I32).tolist()[:2] == [2, -2]


def test_integer_literals_are_cs_octal_binary_and_hex_included():
    """A leading 0 is octal in PTX as in C: ``01`` raised Python's ValueError here, a candidate's runtime_error that
    left a GPU verdict standing in the CPU cross-check (the thirty-seventh red team's ``a05``)."""
    i = np.array([5, 7], dtype=np.int32)
    assert one("mul.lo.s32 $0, $1, 01;", i, out=I32).tolist() == [5, 7]
    assert one("mul.lo.s32 $0, $1, 010;", i, out=I32).tolist() == [40, 56]
    assert one("and.b32 $0, $1, 0b11;", i, out=I32).tolist() == [1, 3]
    assert one("add.s32 $0, $1, 0x10U;", i, out=I32).tolist() == [21, 23]
    assert one("add.s32 $0, $1, -0;", i, out=I32).tolist() == [5, 7]
    with pytest.raises(InterpreterUnsupported):
        one("add.s32 $0, $1, 09;", i, out=I32)  # not a literal in PTX either


def test_a_nan_a_float_instruction_makes_is_the_gpus_canonical_nan():
    """GPUs give 0x7FFFFFFF for every NaN a float instruction makes or passes on; numpy gives x86's 0xFFC00000
    (the thirty-seventh red team's ``a01`` branched on those bits). ``neg``/``abs`` of a NaN are unspecified."""
    made = one("sub.f32 $0, $1, 0f7F800000;", f32(np.inf, 1.0))  # inf - inf
    assert made.view(np.uint32).tolist()[0] == 0x7FFFFFFF and made[1] == -np.inf
    passed = one("mul.f32 $0, $1, 0f3F800000;", np.array([0xFFC00001], dtype=np.uint32).view(np.float32))
    assert passed.view(np.uint32).tolist() == [0x7FFFFFFF]
    assert one("add.sat.f32 $0, $1, 0f7F800000;", f32(-np.inf)).tolist() == [0.0]  # .sat: a NaN is +0
    kept = np.array([0xFFC00001], dtype=np.uint32).view(np.float32)
    assert one("mov.b32 $0, $1;", kept).view(np.uint32).tolist() == [0xFFC00001]  # a move keeps the bits
    with pytest.raises(InterpreterUnsupported, match="NaN"):
        one("neg.f32 $0, $1;", kept)


def test_what_the_emulator_did_not_foresee_is_unsupported_not_the_candidates_error(monkeypatch):
    from tritonrl.verify.child import ptx

    def broken(a, b):
        raise ValueError("not foreseen")

    monkeypatch.setitem(ptx._BIT_OPS, "and", (2, broken))
    with pytest.raises(InterpreterUnsupported, match="not foreseen"):
        one("and.b32 $0, $1, 1;", np.array([1], dtype=np.uint32), out=U32)


def test_fma_rounds_once_and_div_approx_ends_where_the_ptx_isa_says():
    """The thirty-seventh red team's ``a03``/``a07`` (an fma rounded twice: (1 + 2^-12)^2 + 2^-70 is 0x3F801001 on
    a GPU) and ``a02``/``a08`` (``div.approx.f32`` by |b| in (2^126, 2^128) is 0 there, NaN for an infinite a)."""
    a, c = f32(1 + 2.0 ** -12), f32(2.0 ** -70)
    assert one("fma.rn.f32 $0, $1, $1, $2;", a, c).view(np.uint32).tolist() == [0x3F801001]
    assert one("div.approx.f32 $0, $1, $2;", f32(2.0 ** 24, np.inf, 1.0), f32(2.0 ** 127, 2.0 ** 127, 2.0)).tolist()[0] == 0
    assert np.isnan(one("div.approx.f32 $0, $1, $2;", f32(np.inf), f32(2.0 ** 127)))[0]
    assert one("div.full.f32 $0, $1, $2;", f32(2.0 ** 24), f32(2.0 ** 127))[0] == np.float32(2.0 ** -103)  # full range


def test_min_and_max_of_two_zeros_do_not_depend_on_the_operands_order():
    z, nz = f32(0.0), f32(-0.0)
    for x, y in ((z, nz), (nz, z)):
        assert np.signbit(one("min.f32 $0, $1, $2;", x, y)[0]) and not np.signbit(one("max.f32 $0, $1, $2;", x, y)[0])


def test_whitespace_other_than_a_space_separates_an_opcode_from_its_operands():
    assert one("max.f32\t$0, $1, 0f00000000;", f32(-1.0, 2.0)).tolist() == [0.0, 2.0]


def test_braces_declarations_comparisons_selections_and_guards():
    """The thirty-seventh red team's honest ``h05`` (a ReLU as ``setp``/``selp`` in braces) was ``cpu_unsupported``,
    so rejected by the CPU cross-check on a GPU too; declared registers, predicates and ``@p`` guards run now."""
    x = f32(-2.0, 0.5, np.nan, 3.0)
    relu = one("{ .reg .pred p; setp.gt.f32 p, $1, 0f00000000; selp.f32 $0, $1, 0f00000000, p; }", x)
    assert relu.tolist()[:2] == [0.0, 0.5] and relu[2] == 0 and relu[3] == 3.0  # a NaN is not > 0: ordered
    unordered = one("{ .reg .pred p; setp.gtu.f32 p, $1, 0f00000000; selp.f32 $0, $1, 0f00000000, p; }", x)
    assert np.isnan(unordered[2])
    guarded = one("{ .reg .pred p; .reg .f32 t<2>; setp.lt.f32 p, $1, 0f00000000; mov.f32 t0, $1;"
                  " @p mov.f32 t0, 0f00000000; @!p add.f32 t1, t0, t0; @p mov.f32 t1, t0; mov.f32 $0, t1; }", x)
    assert guarded.tolist()[:2] == [0.0, 1.0] and guarded[3] == 6.0
    i = np.array([-1, 1], dtype=np.int32)
    assert one("{ .reg .pred p; setp.lo.u32 p, $1, 2; selp.s32 $0, 1, 0, p; }", i.view(np.uint32),
               out=I32).tolist() == [0, 1]  # unsigned: -1 is the largest


def test_several_statements_several_outputs_and_comments():
    a = f32(1.0, 2.0)
    lo, hi = run("min.f32 $0, $2, $3; // the smaller\n max.f32 $1, $2, $3; /* the larger */",
                 "=r,=r,r,r", [a, f32(1.5, 1.5)], [F32, F32], 1)
    assert lo.tolist() == [1.0, 1.5] and hi.tolist() == [1.5, 2.0]
    assert one("mov.f32 $0, 1.5; add.f32 $0, $0, $1;", a).tolist() == [2.5, 3.5]  # an output read after it is written


@pytest.mark.parametrize("asm, constraints, why", [
    ("mov.u32 $0, %smid;", "=r,r", "special register"),
    ("mov.f32 $0, t;", "=r,r", "a register never declared"),
    ("{ .reg .f32 t; mov.f32 $0, t; }", "=r,r", "a declared register read before it is written"),
    ("{ .reg .pred p; setp.lt.f32 p, $1, 0f00000000; @p mov.f32 $0, $1; }", "=r,r", "an output left unwritten in "
     "the lanes a guard skipped"),
    ("{ .reg .b64 t; mov.b64 t, 0; mov.b32 $0, $1; }", "=r,r", "a 64-bit declaration"),
    ("$L: mov.b32 $0, $1;", "=r,r", "a label"),
    ("setp.lt.and.f32 p, $1, $1, q;", "=r,r", "a combined comparison"),
    ("@p mov.b32 $0, $1;", "=r,r", "a predicate"),
    ("add.rz.f32 $0, $1, $1;", "=r,r", "a rounding numpy does not do"),
    ("ex2.f32 $0, $1;", "=r,r", "ex2 has only the approximate form"),
    ("max.f23 $0, $1, $1;", "=r,r", "a type PTX has not"),
    ("popc.b32 $0, $1;", "=r,r", "an opcode not run here"),
    ("tanh.approx.f32 $0, $1;", "=r,r", "2^-11 on a GPU: exact here would be right where a GPU is not"),
    ("sin.approx.f32 $0, $1;", "=r,r", "the same, outside [-pi, pi]"),
    ("add.f32 $0, $1;", "=r,r", "an operand missing"),
    ("mov.b32 $1, $1;", "=r,r", "writing an input"),
    ("mov.b32 $0, $2;", "=r,r", "a register never given"),
    ("add.f32 $1, $2, $2;", "=r,=r,r", "an output never written"),
    ("mov.b64 $0, $1;", "=l,l", "64-bit registers"),
    ("shl.u32 $0, $1, 1;", "=r,r", "shl is .b32 only (the thirty-seventh red team's a04)"),
    ("abs.u32 $0, $1;", "=r,r", "integer abs is signed only"),
    ("add.s32 $0, $1, 0f3F800000;", "=r,r", "a float literal for an integer operand"),
    ("add.s32 $0, $1, 4294967296;", "=r,r", "an immediate wider than 32 bits"),
])
def test_anything_else_is_unsupported_not_guessed(asm, constraints, why):
    outs = constraints.count("=")
    values = [f32(1.0)] * (len(constraints.split(",")) - outs)
    with pytest.raises(InterpreterUnsupported):
        run(asm, constraints, values, [F32] * outs, 1)


def test_packed_and_16_bit_operands_are_unsupported():
    with pytest.raises(InterpreterUnsupported, match="pack=4"):
        run("mov.b32 $0, $1;", "=r,r", [f32(1.0)], [F32], 4)
    with pytest.raises(InterpreterUnsupported, match="32-bit"):
        run("mov.b32 $0, $1;", "=r,r", [np.array([1.0], dtype=np.float16)], [F32], 1)


def test_approximate_instructions_round_faithfully_by_the_operands_bits_and_a_salt(monkeypatch):
    """r37 a06: ``rcp.approx - rcp.rn`` was 0 for every input on the CPU alone (a GPU's is not correctly
    rounded). Now an inexact result takes either neighbour, the same for the same input within a process, another
    pattern in another process; exact results, and the ``.rn`` forms, as before."""
    import os

    from tritonrl.verify.child import ptx

    t = (np.arange(1, 4097, dtype=np.float32) * np.float32(1.37)).astype(np.float32)
    exact = (1.0 / t.astype(np.float64)).astype(np.float32)
    approx, rn = one("rcp.approx.f32 $0, $1;", t), one("rcp.rn.f32 $0, $1;", t)
    assert rn.tobytes() == exact.tobytes()
    ulps = np.abs(approx.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64))
    assert ulps.max() == 1 and 0.3 < (ulps == 1).mean() < 0.7  # either neighbour, about half of each
    assert one("rcp.approx.f32 $0, $1;", t).tobytes() == approx.tobytes()  # a function of the input
    powers = f32(0.25, 1.0, 2.0, 1024.0)
    assert one("rcp.approx.f32 $0, $1;", powers).tolist() == [4.0, 1.0, 0.5, 1.0 / 1024]  # exact stays exact
    specials = f32(0.0, -0.0, np.inf, np.nan)
    assert np.array_equal(one("rcp.approx.f32 $0, $1;", specials)[:3], f32(np.inf, -np.inf, 0.0))
    for asm in ("sqrt.approx.f32 $0, $1;", "ex2.approx.f32 $0, $1;", "lg2.approx.f32 $0, $1;",
                "rsqrt.approx.f32 $0, $1;", "div.full.f32 $0, $1, $2;", "div.approx.f32 $0, $1, $2;"):
        args = (t, t[::-1].copy()) if asm.startswith("div") else (t / 512,)
        got = one(asm, *args).astype(np.float64)
        want = {"sqrt": np.sqrt, "ex2": np.exp2, "lg2": np.log2, "rsqrt": lambda a: 1 / np.sqrt(a),
                "div": np.divide}[asm.split(".")[0]](*[a.astype(np.float64) for a in args])
        assert np.all(np.abs(got - want) <= np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)), asm
        assert np.any(got != want.astype(np.float32)), asm  # not rounded to nearest everywhere
    monkeypatch.setitem(ptx._salts, os.getpid(), np.uint64(12345))
    assert one("rcp.approx.f32 $0, $1;", t).tobytes() != approx.tobytes()  # another process, another pattern
