"""Direct probes of tritonrl.verify.child.ptx.run (no verifier): what the CPU emulation returns for PTX snippets."""
import numpy as np
from tritonrl.verify.child import ptx

def f(v): return np.array([v], dtype=np.float32)
def bits(a): return [hex(int(x)) for x in np.asarray(a).view(np.uint32).ravel()]
def run(asm, cons, vals, outs=(np.float32,)):
    try:
        r = ptx.run(asm, cons, vals, [np.dtype(o) for o in outs], 1)
        return [bits(x) for x in r]
    except Exception as e:
        return f"{type(e).__name__}: {e}"

P = [
 ("NaN from inf-inf (GPU: 0x7fffffff)", "add.f32 $0, $1, 0f7F800000; sub.f32 $0, $0, 0f7F800000;", "=f,f", [f(1.5)]),
 ("NaN mantissa low bits (GPU: 0x3fffff)", "add.f32 $0, $1, 0f7F800000; sub.f32 $0, $0, 0f7F800000; and.b32 $0, $0, 0x003FFFFF;", "=r,f", [f(1.5)]),
 ("NaN payload add (GPU: 0x7fffffff)", "add.f32 $0, $1, 0f7FC00001;", "=f,f", [f(1.0)]),
 ("min.NaN (GPU canonical 0x7fffffff)", "min.NaN.f32 $0, $1, 0f7FC00001;", "=f,f", [f(1.0)]),
 ("min(-0,+0) (CPU: order-dependent)", "min.f32 $0, $1, 0f00000000;", "=f,f", [f(-0.0)]),
 ("min(+0,-0) (CPU: order-dependent)", "min.f32 $0, 0f00000000, $1;", "=f,f", [f(-0.0)]),
 ("max(-0,+0) (CPU: order-dependent)", "max.f32 $0, $1, 0f00000000;", "=f,f", [f(-0.0)]),
 ("max(+0,-0) (CPU: order-dependent)", "max.f32 $0, 0f00000000, $1;", "=f,f", [f(-0.0)]),
 ("fma double rounding (IEEE once: 0x3f801001)", "fma.rn.f32 $0, $1, $1, 0f1C800000;", "=f,f", [np.array([0x3F800800], np.uint32).view(np.float32)]),
 ("div.approx b=2^127 (GPU: 0)", "div.approx.f32 $0, $1, 0f7F000000;", "=f,f", [f(2.0**20)]),
 ("div.full b=2^127", "div.full.f32 $0, $1, 0f7F000000;", "=f,f", [f(2.0**20)]),
 ("octal immediate 010", "add.s32 $0, $1, 010;", "=r,r", [np.array([1], np.int32)]),
 ("octal immediate 08", "add.s32 $0, $1, 08;", "=r,r", [np.array([1], np.int32)]),
 ("shl.u32 (not PTX)", "shl.u32 $0, $1, 1;", "=r,r", [np.array([1], np.int32)]),
 ("shl.s32 (not PTX)", "shl.s32 $0, $1, 1;", "=r,r", [np.array([1], np.int32)]),
 ("abs.u32 (not PTX)", "abs.u32 $0, $1;", "=r,r", [np.array([-5], np.int32)]),
 ("neg.u32 (not PTX)", "neg.u32 $0, $1;", "=r,r", [np.array([5], np.int32)]),
 ("mov.s32 float imm", "mov.s32 $0, 0f3F800000;", "=r,r", [np.array([5], np.int32)]),
 ("add.s32 float-hex imm", "add.s32 $0, $1, 0f3F800000;", "=r,r", [np.array([0], np.int32)]),
 ("mul.f32 decimal 0.1", "mul.f32 $0, $1, 0.1;", "=f,f", [f(1.0)]),
 ("tab separator", "max.f32\t$0, $1, 0f00000000;", "=f,f", [f(1.0)]),
 ("sqrt.approx vs sqrt.rn diff", "sqrt.approx.f32 $0, $1; sqrt.rn.f32 $1, $1; sub.f32 $0, $0, $1;", "=f,f", [f(3.0)]),
 ("rcp.approx of 2^127 (GPU?)", "rcp.approx.f32 $0, $1;", "=f,f", [f(2.0**127)]),
 ("ex2.approx.f32 -130 (subnormal)", "ex2.approx.f32 $0, $1;", "=f,f", [f(-130.0)]),
 ("ex2.approx.ftz.f32 -130", "ex2.approx.ftz.f32 $0, $1;", "=f,f", [f(-130.0)]),
 ("cvt.rzi.s32.f32 nan", "cvt.rzi.s32.f32 $0, $1;", "=r,f", [f(float('nan'))]),
 ("cvt.rni.s32.f32 2.5", "cvt.rni.s32.f32 $0, $1;", "=r,f", [f(2.5)]),
 ("shr.s32 by 40", "shr.s32 $0, $1, 40;", "=r,r", [np.array([-8], np.int32)]),
 ("shr.u32 by 40", "shr.u32 $0, $1, 40;", "=r,r", [np.array([-8], np.int32)]),
 ("shl.b32 by 0xFFFFFFFF", "shl.b32 $0, $1, 0xFFFFFFFF;", "=r,r", [np.array([1], np.int32)]),
 ("mul.lo.s32", "mul.lo.s32 $0, $1, $1;", "=r,r", [np.array([0x10001], np.int32)]),
 ("huge int imm 2^32", "add.u32 $0, $1, 4294967296;", "=r,r", [np.array([1], np.int32)]),
 ("sat NaN", "add.sat.f32 $0, $1, 0f7FC00000;", "=f,f", [f(1.0)]),
 ("neg NaN sign", "neg.f32 $0, $1;", "=f,f", [np.array([0x7FC00000], np.uint32).view(np.float32)]),
 ("two outputs", "mov.b32 $0, $2; mov.b32 $1, $2;", "=r,=r,r", [np.array([7], np.int32)], (np.int32, np.int32)),
 ("write input reg", "mov.b32 $1, $1; mov.b32 $0, $1;", "=r,r", [np.array([7], np.int32)]),
 ("0/0 sign", "div.rn.f32 $0, $1, $1;", "=f,f", [f(0.0)]),
 ("sqrt(-1)", "sqrt.rn.f32 $0, $1;", "=f,f", [f(-1.0)]),
 ("lg2.approx(-1)", "lg2.approx.f32 $0, $1;", "=f,f", [f(-1.0)]),
 ("rsqrt.approx(-0)", "rsqrt.approx.f32 $0, $1;", "=f,f", [f(-0.0)]),
 ("cvt.rn.f32.s32 ftz", "cvt.rn.ftz.f32.s32 $0, $1;", "=f,r", [np.array([7], np.int32)]),
 ("empty asm", "", "=r,r", [np.array([7], np.int32)]),
 ("mov.b32 -1", "mov.b32 $0, -1;", "=r,r", [np.array([7], np.int32)]),
 ("fma double rounding 2 (IEEE 0x3f801001)", "fma.rn.f32 $0, $1, $2, $3;", "=f,f,f,f", [np.array([0x3F800800], np.uint32).view(np.float32), np.array([0x3F800800], np.uint32).view(np.float32), f(2.0**-70)]),
]
for p in P:
    name, asm, cons, vals = p[:4]
    outs = p[4] if len(p) > 4 else (np.float32 if cons.split(',')[0] == '=f' else np.int32,)
    print(f"{name:45s} {run(asm, cons, vals, outs)}")
