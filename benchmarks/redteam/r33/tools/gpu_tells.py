"""Prints each tell's value on the device this runs on (TRITON_INTERPRET=1 for the interpreter).
Not a case: a probe that shows what a GPU computes for the a01-a06 tells (and three of the thirty-fourth red team's). One kernel a tell (a constexpr picks
it), each launched on its own, so that one a compiler refuses does not hide the others (on an H200 at 684e41c the
single kernel of all eight failed in TritonGPUCoalesce: 7 // 0 of constants folded to a division by zero); the
operands come from loaded values, so no tell is folded away at compile time."""
import torch, triton, triton.language as tl

NAMES = ["a01 a*a-c", "a02 fma", "a03 int8(300)", "a04 uint32(-1)", "a05 7//0", "exp2(-130)", "int16(70000)",
         "int32(3e9)", "r34 a01 bf16(1+2^-8+2^-9)", "r34 a03 fp8e4nv(1000)", "r34 a09 fp16 rtz(1e6)"]


@triton.jit
def tell(x_ptr, out_ptr, WHICH: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    z = x * 0.0
    if WHICH == 0:
        a = z + 1.000244140625
        v = a * a - 1.00048828125                           # a01 implicit contraction
    elif WHICH == 1:
        a = z + 1.000244140625
        v = tl.fma(a, a, z - 1.00048828125)                 # a02 explicit fma
    elif WHICH == 2:
        v = (z + 300.0).to(tl.int8).to(tl.float32)          # a03
    elif WHICH == 3:
        v = (z - 1.0).to(tl.uint32).to(tl.float32)          # a04
    elif WHICH == 4:
        zero = z.to(tl.int32)
        v = ((zero + 7) // zero).to(tl.float32)             # a05
    elif WHICH == 5:
        v = tl.exp2(z - 130.0)                              # subnormal
    elif WHICH == 6:
        v = (z + 70000.0).to(tl.int16).to(tl.float32)
    elif WHICH == 7:
        v = (z + 3e9).to(tl.int32).to(tl.float32)
    elif WHICH == 8:
        v = (z + 1.005859375).to(tl.bfloat16).to(tl.float32)
    elif WHICH == 9:
        v = (z + 1000.0).to(tl.float8e4nv).to(tl.float32)
    else:
        v = (z + 1e6).to(tl.float16, fp_downcast_rounding="rtz").to(tl.float32)
    tl.store(out_ptr + tl.arange(0, 16), v)


dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.ones(16, device=dev)
for which, name in enumerate(NAMES):
    out = torch.zeros(16, device=dev)
    try:
        tell[(1,)](x, out, WHICH=which)
        print(f"{dev} {name}: {out[0].item()!r}", flush=True)
    except Exception as error:  # noqa: BLE001 - a probe: say what failed and go on
        print(f"{dev} {name}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
              flush=True)
